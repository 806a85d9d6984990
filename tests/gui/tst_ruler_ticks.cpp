// The ruler's ticks and their labels.
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

class TestRulerTicks : public ScratchTest {
  Q_OBJECT

 private slots:
  // Ruler: at every zoom from a 2 µs window to a 100 s one, in a 1400 px view, labels
  // measured at 7 px a character never collide, units follow the zoom and neighbours
  // never read the same.
  void testRulerLabels() {
    const auto width = [](const std::string& s) { return 7.0 * static_cast<double>(QString::fromStdString(s).size()); };
    for (double window = 2e3; window <= 1e11; window *= 3.7) {
      for (int64_t origin : {int64_t{0}, int64_t{12'300'000'000}}) {
        TimeAxis axis{origin + 1234, origin + 1234 + static_cast<int64_t>(window), 1400};
        const RulerTicks ticks = rulerTicks(axis, 0, width);
        QVERIFY2(ticks.ticks.size() >= 2,
                 qPrintable(QString("window %1: %2 ticks").arg(window).arg(ticks.ticks.size())));
        for (size_t i = 1; i < ticks.ticks.size(); ++i) {
          QVERIFY(ticks.ticks[i].x - ticks.ticks[i - 1].x >= width(ticks.ticks[i - 1].label) + 12 - 1e-6);
          QVERIFY2(ticks.ticks[i].label != ticks.ticks[i - 1].label, ticks.ticks[i].label.c_str());
        }
      }
    }
    TimeAxis seconds{0, 60'000'000'000, 1400};
    QVERIFY(rulerTicks(seconds, 0, width).ticks[1].label.find(" s") != std::string::npos);
    TimeAxis micro{5'000, 25'000, 1400};
    const std::string first = rulerTicks(micro, 0, width).ticks[0].label;
    QCOMPARE(first.substr(first.size() - 3), std::string("µs"));
  }
};

DDPSCOPE_TEST_MAIN(TestRulerTicks)
#include "tst_ruler_ticks.moc"
