// The clock offset estimator keeps the sample of the shortest round trip.
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

class TestClockOffsetEstimator : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString path(const char* name) { return dir_.filePath(name); }

 private slots:

  void testClockEstimatorKeepsMinimumRoundTrip() {
    ClockOffsetEstimator e;
    QVERIFY(!e.best());
    // True offset +1000: the collector reads t + 1000. Delays differ per sample.
    e.add(0, 0 + 300 + 1000, 400);         // rtt 400, asymmetric: estimate 1100
    e.add(10'000, 10'020 + 1000, 10'040);  // rtt 40: estimate 1000
    e.add(20'000, 20'500 + 1000, 20'600);  // rtt 600
    e.add(30'000, 0, 29'000);              // t1 < t0: ignored
    // A collector time no clock reads (off the wire) would overflow: dropped.
    e.add(40'000, std::numeric_limits<int64_t>::min(), 40'001);
    e.add(std::numeric_limits<int64_t>::min(), 0, 1);
    QVERIFY(e.best());
    QCOMPARE(e.best()->rtt_ns, int64_t(40));
    QCOMPARE(e.best()->offset_ns, int64_t(1000));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestClockOffsetEstimator)
#include "tst_clock_offset_estimator.moc"
