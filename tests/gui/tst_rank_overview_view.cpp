// The Ranks tab's overview: a thousand ranks at a glance with every label readable, two
// ranks both labelled and compared with each other, and near ties kept in rank order.
#include <QtTest/QtTest>

#include "ranks_fixture.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;
using namespace ddpscope::gui::ranks_fixture;

class TestRankOverviewView : public RanksTest {
  Q_OBJECT

 private slots:

  void testAThousandRanksAtAGlance() {
    const std::string file = path("wide.ddprun");
    testing::write_many_ranks(file, 1024, 12, 517, 8);
    MainWindow window{QString()};
    RanksPage* page = showRanks(window, file);
    QVERIFY(page);
    QVERIFY2(page->headline().contains("1024 ranks × 12 iterations"), qPrintable(page->headline()));
    QVERIFY2(page->headline().contains("Slowest: rank 517 on node-64, mean 14.00 ms against the median of the other "
                                       "1023 ranks, 10.00 ms (+40.0%)"),
             qPrintable(page->headline()));
    RankOverviewView* view = page->view();
    const RankOverview& o = view->overview();
    QCOMPARE(o.rows.size(), size_t{1024});
    QCOMPARE(o.rows[0].rank, 517);
    // Tied ranks follow in rank order, and every row kept large has its label: rank 0, 1,
    // 2 ... under the straggler, not every other one (1, 3, 5, 7).
    for (size_t i = 1; i < 8; ++i)
      QCOMPARE(o.rows[i].rank, static_cast<int>(i - 1));
    const auto labelled = view->labelledRows();
    QVERIFY(labelled.size() > view->focusRows());
    for (size_t i = 0; i < view->focusRows(); ++i)
      QCOMPARE(labelled[i], i);
    // The straggler's row is kept large and drawn in the scale's darkest colour.
    QVERIFY(view->focusRows() > 10);
    const QPoint cell = view->pointOf(0, 5);
    QCOMPARE(view->cellAt(cell), (std::pair<int, int>{0, 5}));
    const QImage shot = view->grab().toImage();
    QCOMPARE(shot.pixelColor(cell), RankOverviewView::colorOf(o.high_ms, o.low_ms, o.high_ms));
    QCOMPARE(shot.pixelColor(view->pointOf(600, 5)), RankOverviewView::colorOf(o.low_ms, o.low_ms, o.high_ms));
    // A click opens the timeline at rank 517's iteration 6 (20 ms apart, 14 ms long).
    QTest::mouseClick(view, Qt::LeftButton, {}, cell);
    QCOMPARE(window.part<QTabWidget>("tabs")->currentIndex(), window.tabIndex(QStringLiteral("timeline")));
    const int64_t begin = 6 * 20'000'000;
    QVERIFY(window.part<TimelinePage>()->view()->axis().begin_ns <= begin);
    QVERIFY(window.part<TimelinePage>()->view()->axis().end_ns >= begin + 14'000'000);
    QVERIFY(!window.part<TimelinePage>()->view()->rankCollapsed(517));
    // 1,024 ranks on 128 hosts: the timeline groups them by host, folded, but for the
    // host of the rank asked for.
    QVERIFY(window.part<TimelinePage>()->view()->hostCollapsed("node-0"));
    QVERIFY(!window.part<TimelinePage>()->view()->hostCollapsed("node-64"));
    QVERIFY(window.part<TimelinePage>()->view()->rankCollapsed(3));
    QVERIFY(window.part<TimelinePage>()->view()->height() < 128 * 20 + 2000);
    // By rank, by host.
    page->orderBox()->setCurrentIndex(page->orderBox()->findData(static_cast<int>(OverviewOrder::ByRank)));
    QCOMPARE(view->overview().rows[0].rank, 0);
    page->orderBox()->setCurrentIndex(page->orderBox()->findData(static_cast<int>(OverviewOrder::ByHost)));
    QCOMPARE(view->overview().groups.size(), size_t{128});
    QCOMPARE(view->overview().groups[0].host, std::string("node-64"));
  }

  // Two ranks: both rows labelled, and the slower compared with the other rank, not with a
  // median that is itself ("+0.0%"). Ranks alike: none is called slowest.
  void testTwoRanks() {
    for (const int slow : {1, 0}) {
      const std::string file = path(slow ? "two.ddprun" : "two-alike.ddprun");
      testing::write_many_ranks(file, 2, 12, slow ? 1 : 0, 8, slow ? 4'000'000 : 0);
      MainWindow window{QString()};
      RanksPage* page = showRanks(window, file);
      QVERIFY(page);
      QVERIFY2(page->headline().contains("2 ranks × 12 iterations"), qPrintable(page->headline()));
      if (slow)
        QVERIFY2(
            page->headline().contains("Slowest: rank 1 on node-0, mean 14.00 ms against rank 0's 10.00 ms (+40.0%)"),
            qPrintable(page->headline()));
      else
        QVERIFY2(page->headline().contains("No rank stands out: the slowest, rank 0 on node-0"),
                 qPrintable(page->headline()));
      QVERIFY(!page->headline().contains("+0.0%"));
      QCOMPARE(page->view()->labelledRows(), (std::vector<size_t>{0, 1}));
    }
  }

  // Means within half a percent read alike: they keep rank order, not their noise's.
  void testNearTiesKeepRankOrder() {
    std::vector<probes::TimeBreakdown> rows;
    const double ms[4] = {10.00, 10.02, 9.99, 10.01};
    for (int r = 0; r < 4; ++r)
      for (int i = 1; i <= 3; ++i) {
        probes::TimeBreakdown b;
        b.rank = r;
        b.iteration = i;
        b.iteration_ms = ms[r];
        rows.push_back(b);
      }
    const RankOverview o = makeRankOverview(rows, {}, OverviewMetric::Iteration, OverviewOrder::SlowestFirst);
    for (int r = 0; r < 4; ++r)
      QCOMPARE(o.rows[static_cast<size_t>(r)].rank, r);
  }
};

DDPSCOPE_TEST_MAIN(TestRankOverviewView)
#include "tst_rank_overview_view.moc"
