// The probes' sink towards a collector: with no collector listening it never blocks the
// training thread; writes past its queue are refused at once.
#include <QtTest/QtTest>

#include "running_collector.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::running_collector;

class TestCollectorSink : public ScratchTest {
  Q_OBJECT

 private slots:

  void testASinkWithoutCollectorNeverBlocks() {
    // Nobody listens on this port: sends queue up to the limit, then are refused.
    CollectorSink sink({.batch_endpoint = "tcp://127.0.0.1:9", .clock_endpoint = "tcp://127.0.0.1:9", .token = "t"});
    QVERIFY(!sink.measure_clock());
    QElapsedTimer timer;
    timer.start();
    int refused = 0;
    for (int i = 0; i < 2000; ++i)
      refused += sink.write(batch_of(0, 10, 0)) ? 0 : 1;
    QVERIFY(refused > 0);
    QVERIFY2(timer.elapsed() < 5000, qPrintable(QString("%1 ms").arg(timer.elapsed())));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCollectorSink)
#include "tst_collector_sink.moc"
