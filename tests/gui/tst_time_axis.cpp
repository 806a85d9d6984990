// TimeAxis: time <-> pixel, zoom around a point, pan, fit.
#include <QtTest/QtTest>
#include <QAbstractItemModelTester>
#include <map>
#include "gui_test_runs.h"
#include "overlap_model.h"
#include "run_data.h"
#include "sequence_data.h"
#include "range_summary.h"
#include "ruler_ticks.h"
#include "span_details.h"
#include "span_table.h"
#include "time_axis.h"
#include "time_format.h"
#include "timeline_search.h"
#include "track_layout.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestTimeAxis : public ScratchTest {
  Q_OBJECT

 private slots:
  void testTimeAxisMapping() {
    TimeAxis a{100'000, 200'000, 100};  // 1000 ns per pixel
    QCOMPARE(a.nsPerPx(), 1000.0);
    QCOMPARE(a.toPx(150'000), 50.0);
    QCOMPARE(a.toNs(25), int64_t(125'000));
    a.zoom(2, 25);  // the time under pixel 25 stays there
    QCOMPARE(a.toNs(25), int64_t(125'000));
    QCOMPARE(a.end_ns - a.begin_ns, int64_t(50'000));
    a.pan(10);  // 500 ns per pixel now
    QCOMPARE(a.toNs(25), int64_t(130'000));
    a.zoom(1e9, 0);  // never narrower than the minimum span
    QCOMPARE(a.end_ns - a.begin_ns, TimeAxis::kMinSpanNs);
    a.fit(0, 1'000'000, 0.0);
    QCOMPARE(a.begin_ns, int64_t(0));
    QCOMPARE(a.end_ns, int64_t(1'000'000));
    a.zoom(0.5, 50);  // out
    QCOMPARE(a.end_ns - a.begin_ns, int64_t(2'000'000));
  }
};

DDPSCOPE_TEST_MAIN(TestTimeAxis)
#include "tst_time_axis.moc"
