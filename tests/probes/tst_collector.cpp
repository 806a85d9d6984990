// The collector over real ZeroMQ sockets (loopback) in one process: batches with the
// run's token are stored, others rejected and counted; clock offsets measured against
// it are near zero on one host, and an injected offset is recovered and applied.
#include <QtTest/QtTest>

#include "running_collector.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::running_collector;

class TestCollector : public ScratchTest {
  Q_OBJECT

 private slots:

  void testBatchesWithTheTokenAreStored() {
    const std::string file = path("token.ddprun");
    {
      RunningCollector c({.run_file = file, .token = "secret", .run = {.world_size = 2}});
      CollectorSink good({.batch_endpoint = c.collector.batch_endpoint(),
                          .clock_endpoint = c.collector.clock_endpoint(),
                          .token = "secret"});
      CollectorSink bad({.batch_endpoint = c.collector.batch_endpoint(),
                         .clock_endpoint = c.collector.clock_endpoint(),
                         .token = "guess"});
      for (int i = 0; i < 10; ++i) {
        QVERIFY(good.write(batch_of(i % 2, 1000, i * 100000)));
        QVERIFY(bad.write(batch_of(5, 7, 0)));
      }
      // Committed batches are acknowledged; rejected ones never are.
      good.settle(std::chrono::seconds(10));
      QCOMPARE(good.confirmed_events(), uint64_t(10000));
      bad.settle(std::chrono::milliseconds(200));
      QCOMPARE(bad.confirmed_events(), uint64_t(0));
      // The wrong token gets no clock answers either.
      QVERIFY(!bad.measure_clock());
      QThread::msleep(300);
      c.join();
      QCOMPARE(c.collector.rejected(), uint64_t(10));
      QCOMPARE(c.collector.batches(), uint64_t(10));
    }
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t(10000));
    QCOMPARE(r.run().rejected_batches, int64_t(10));
    QCOMPARE(r.run().status, std::string("finished"));
    QCOMPARE(r.ranks().size(), size_t(2));  // rank 5 never got in
    QCOMPARE(r.integrity_check(), std::string("ok"));
  }

  void testClockOffsetOnOneHostIsNearZero() {
    RunningCollector c({.run_file = path("clock.ddprun"), .token = "t"});
    CollectorSink sink(
        {.batch_endpoint = c.collector.batch_endpoint(), .clock_endpoint = c.collector.clock_endpoint(), .token = "t"});
    QVERIFY(sink.measure_clock());
    // Same machine, same clock: only the measurement error remains (half a round trip).
    QVERIFY2(std::llabs(sink.clock_offset_ns()) < 2'000'000,
             qPrintable(QString("offset %1 ns").arg(sink.clock_offset_ns())));
  }

  void testInjectedOffsetIsRecoveredAndApplied() {
    const std::string file = path("skew.ddprun");
    const int64_t skew = 5'000'000'000;  // this "rank" runs 5 s ahead
    const int64_t before = now_ns();
    {
      RunningCollector c({.run_file = file, .token = "t"});
      CollectorSink sink({.batch_endpoint = c.collector.batch_endpoint(),
                          .clock_endpoint = c.collector.clock_endpoint(),
                          .token = "t",
                          .clock_skew_ns = skew});
      QVERIFY(std::llabs(sink.clock_offset_ns() + skew) < 2'000'000);
      // An event stamped on the skewed clock, shipped with the measured offset.
      EventBatch b = batch_of(0, 1, sink.local_now_ns());
      b.clock_offset_ns = sink.clock_offset_ns();
      QVERIFY(sink.write(b));
      QThread::msleep(200);
    }
    const int64_t after = now_ns();
    RunStoreReader r(file);
    const auto spans = r.spans();
    QCOMPARE(spans.size(), size_t(1));
    // On the collector's axis the event lies within the test's own time window.
    QVERIFY2(spans[0].t_begin_ns >= before - 2'000'000 && spans[0].t_begin_ns <= after + 2'000'000,
             qPrintable(QString("event at %1, window [%2, %3]").arg(spans[0].t_begin_ns).arg(before).arg(after)));
  }
};

QTEST_GUILESS_MAIN(TestCollector)
#include "tst_collector.moc"
