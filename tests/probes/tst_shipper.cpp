// The shipper: every thread's events reach the sink in batches with the rank, a sequence
// number and the clock skew asked for; flush() ships at once; a batch the sink refuses is
// counted as dropped, never retried into a blocked training thread; and the destructor
// ships what is left. RunStoreSink, the sink of a process without a collector, confirms
// what it stored.
#include <QtTest/QtTest>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "probe.h"
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

namespace {

// Keeps what it is given; refuses every batch while `refuse` is set.
class KeepingSink : public EventSink {
 public:
  bool write(const EventBatch& batch) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (refuse) return false;
    batches.push_back(batch);
    events += batch.events.size();
    return true;
  }
  uint64_t confirmed_events() const override { return events; }
  std::mutex mutex;
  std::vector<EventBatch> batches;
  std::atomic<uint64_t> events{0};
  std::atomic<bool> refuse{false};
};

}  // namespace

class TestShipper : public ScratchTest {
  Q_OBJECT

 private slots:
  void testEveryThreadsEventsReachTheSink() {
    auto owned = std::make_unique<KeepingSink>();
    KeepingSink* sink = owned.get();
    ProbesOn on;
    Shipper shipper(std::move(owned), 3, 1h, 500);  // it wakes only when flushed
    recordOn("a", 100);
    recordOn("b", 50);
    shipper.flush();
    QCOMPARE(sink->events.load(), uint64_t{150});
    QCOMPARE(shipper.shipped(), uint64_t{150});
    std::lock_guard<std::mutex> lock(sink->mutex);
    std::set<std::string> threads;
    for (size_t i = 0; i < sink->batches.size(); ++i) {
      const EventBatch& b = sink->batches[i];
      QCOMPARE(b.rank, 3);
      QCOMPARE(b.sequence, uint64_t(i));
      for (const auto& t : b.threads)
        threads.insert(t.name);
    }
    QVERIFY(threads.count("a") && threads.count("b"));
    const BatchEvent& e = sink->batches.front().events.front();
    QVERIFY(e.t_begin_ns >= 500);  // the skew is added
  }

  void testARefusedBatchIsCountedAsDropped() {
    auto owned = std::make_unique<KeepingSink>();
    KeepingSink* sink = owned.get();
    ProbesOn on;
    Shipper shipper(std::move(owned), 0, 1h);
    sink->refuse = true;
    recordOn("c", 40);
    shipper.flush(50ms);
    QVERIFY2(shipper.dropped() >= 40, qPrintable(QString::number(shipper.dropped())));
    sink->refuse = false;
    recordOn("c", 10);
    shipper.flush();
    QCOMPARE(sink->events.load(), uint64_t{10});  // the refused ones are not sent again
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestShipper)
#include "tst_shipper.moc"
