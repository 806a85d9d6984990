// Thread buffers: a full buffer drops and counts what it could not keep instead of
// blocking the training thread.
#include <QtTest/QtTest>

#include <limits>

#include <QTemporaryDir>
#include <thread>

#include "clock_offset_estimator.h"
#include "event_batch.h"
#include "probe.h"
#include "probe_session.h"
#include "run_store_reader.h"
#include "thread_buffer.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;

namespace ddpscope::probes::testing {
int record_with_probes_compiled_out();  // compiled_out_calls.cpp
}

class TestThreadBuffer : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString path(const char* name) { return dir_.filePath(name); }

 private slots:

  void testFullBufferDropsAndCounts() {
    const QString file = path("overflow.ddprun");
    const uint64_t extra = 1000;
    {
      // The shipper would wake only after an hour: the buffer fills and must drop.
      ProbeSession session({.rank = 0, .run_file = file.toStdString(), .interval = std::chrono::hours(1)});
      std::thread producer([&] {
        for (uint64_t i = 0; i < ThreadBuffer::kCapacity + extra; ++i)
          DDPSCOPE_RECORD(Kind::Mark, "m", static_cast<int64_t>(i), static_cast<int64_t>(i));
      });
      producer.join();
      QCOMPARE(session.dropped(), extra);
      session.finish("finished");
    }
    RunStoreReader run(file.toStdString());
    QCOMPARE(run.span_count(), int64_t(ThreadBuffer::kCapacity));
    QCOMPARE(run.ranks()[0].events_dropped, int64_t(extra));
    // The events kept are the first ones, in order.
    const auto last = run.spans({.t_begin_ns = int64_t(ThreadBuffer::kCapacity) - 1});
    QCOMPARE(last.size(), size_t(1));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestThreadBuffer)
#include "tst_thread_buffer.moc"
