// RunStoreSink, the sink of a process without a collector: what the shipper gives it is
// in the run file, also what is left when the shipper goes without a flush, and it
// confirms what it stored.
#include <QtTest/QtTest>

#include "run_store_reader.h"
#include "run_store_sink.h"
#include "run_store_writer.h"
#include "scratch_test.h"
#include "shipper.h"
#include "threads_recording.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::threads_recording;
using namespace std::chrono_literals;

class TestRunStoreSink : public ScratchTest {
  Q_OBJECT

 private slots:
  void testTheDestructorShipsWhatIsLeftIntoTheRunFile() {
    const std::string file = path("direct.ddprun");
    auto writer = std::make_shared<RunStoreWriter>(file);
    writer->begin_run({"{}", 1, "none", "test"});
    {
      ProbesOn on;
      auto owned = std::make_unique<RunStoreSink>(writer);
      RunStoreSink* sink = owned.get();
      Shipper shipper(std::move(owned), 0, 1h);
      recordOn("d", 10);
      shipper.flush();
      QCOMPARE(sink->confirmed_events(), uint64_t{10});
      recordOn("d", 15);
    }  // no flush: the destructor ships
    writer->end_run("finished", "", 0);
    writer.reset();
    RunStoreReader run(file);
    QCOMPARE(run.spans().size(), size_t{25});
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunStoreSink)
#include "tst_run_store_sink.moc"
