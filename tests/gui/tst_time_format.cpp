// formatDuration: a duration in the unit a user reads it in.
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

class TestTimeFormat : public ScratchTest {
  Q_OBJECT

 private slots:
  void testDurationFormat_data() {
    QTest::addColumn<qint64>("ns");
    QTest::addColumn<QString>("text");
    QTest::newRow("nanoseconds") << qint64{850} << "850 ns";
    QTest::newRow("microseconds") << qint64{12'400} << "12.4 µs";
    QTest::newRow("milliseconds") << qint64{3'210'000} << "3.21 ms";
    QTest::newRow("hundreds of ms") << qint64{250'000'000} << "250 ms";
    QTest::newRow("seconds") << qint64{1'500'000'000} << "1.50 s";
  }
  void testDurationFormat() {
    QFETCH(qint64, ns);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(formatDuration(ns)), text);
  }
};

DDPSCOPE_TEST_MAIN(TestTimeFormat)
#include "tst_time_format.moc"
