// The Ranks tab on real widgets (offscreen): a synthetic 1,024-rank run (rank 517 slow in
// every iteration but the first) shows it first, in red, named in the headline; a click on
// its cell opens the timeline at its iteration; the orders by rank and by host; the
// overview model's values and colour scale; and a real 8-rank job (mpirun,
// oversubscribed) whose rank 5 sleeps in iteration 3, first by idle time.
#include <QtTest/QtTest>

#include <QComboBox>
#include <QProcess>
#include <cmath>

#include "known_iterations_run.h"
#include "main_window.h"
#include "timeline_page.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "rank_overview.h"
#include "rank_overview_view.h"
#include "ranks_page.h"
#include "scratch_test.h"
#include "timeline_view.h"

using namespace ddpscope;
using namespace ddpscope::gui;

// The window at a laptop's size with `file` open on its Ranks tab; null when it did not open.
static RanksPage* showRanks(MainWindow& window, const std::string& file) {
  window.resize(1280, 800);
  window.show();
  if (!window.openRun(QString::fromStdString(file))) return nullptr;
  window.showTab(QStringLiteral("ranks"));
  QApplication::processEvents();
  return window.part<RanksPage>();
}

class TestRanksPage : public ScratchTest {
  Q_OBJECT
 private slots:
  void testOverviewModel() {
    // Three ranks, three iterations: rank 2 slowest after the warm-up, rank 0 slowest in it.
    std::vector<probes::TimeBreakdown> rows;
    const double ms[3][3] = {{50, 10, 10}, {10, 11, 11}, {10, 20, 30}};
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i < 3; ++i) {
        probes::TimeBreakdown b;
        b.rank = r;
        b.iteration = i + 1;
        b.iteration_ms = ms[r][i];
        b.exposed_comm_ms = r == 1 ? 5 : 1;
        rows.push_back(b);
      }
    const std::vector<probes::RankRow> ranks = {{0, "b"}, {1, "a"}, {2, "b"}};
    RankOverview o = makeRankOverview(rows, ranks, OverviewMetric::Iteration, OverviewOrder::SlowestFirst);
    QCOMPARE(o.rows.size(), size_t{3});
    QCOMPARE(o.rows[0].rank, 2);  // mean of iterations 2 and 3: 25 ms (the warm-up left out)
    QCOMPARE(o.rows[0].mean_ms, 25.0);
    QCOMPARE(o.rows[2].rank, 0);
    QCOMPARE(o.iterations, (std::vector<int64_t>{1, 2, 3}));
    QCOMPARE(o.at(0, 2), 30.0f);
    QCOMPARE(o.median_rank_mean_ms, 11.0);
    o = makeRankOverview(rows, ranks, OverviewMetric::ExposedComm, OverviewOrder::SlowestFirst);
    QCOMPARE(o.rows[0].rank, 1);
    o = makeRankOverview(rows, ranks, OverviewMetric::Iteration, OverviewOrder::ByHost);
    // Host b holds the slowest rank: its group first, slowest within it first.
    QCOMPARE(o.groups.size(), size_t{2});
    QCOMPARE(o.groups[0].host, std::string("b"));
    QCOMPARE(o.rows[0].rank, 2);
    QCOMPARE(o.rows[1].rank, 0);
    QCOMPARE(o.rows[2].rank, 1);
    o = makeRankOverview(rows, ranks, OverviewMetric::Iteration, OverviewOrder::ByRank);
    QCOMPARE(o.rows[0].rank, 0);
    // The colour scale: darkest at the top of the scale, palest at its bottom.
    QVERIFY(RankOverviewView::colorOf(30, 10, 30).lightness() < RankOverviewView::colorOf(10, 10, 30).lightness());
    QCOMPARE(RankOverviewView::colorOf(std::nan(""), 10, 30), QColor(0xee, 0xee, 0xee));
  }

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

  void testARealEightRankJob() {
    // 8 ranks on this machine's cores (oversubscribed); rank 5 sleeps 0.4 s between
    // forward and backward in iteration 3: its idle time, the others' exposed wait.
    const std::string file = path("eight.ddprun");
    QProcess job;
    job.start(DDPSCOPE_CLI_PATH,
              {"train", "--np", "8", "--oversubscribe", "--iters", "5", "--width", "32", "--depth", "2",
               "--inject-stall", "5:3:0.4", "--out", QString::fromStdString(file), "--progress", "lines"});
    QVERIFY(job.waitForFinished(240000));
    QVERIFY2(job.exitCode() == 0, job.readAllStandardError().constData());
    MainWindow window{QString()};
    window.resize(1024, 700);
    window.show();
    QVERIFY(window.openRun(QString::fromStdString(file)));
    window.showTab(QStringLiteral("ranks"));
    RanksPage* page = window.part<RanksPage>();
    page->metricBox()->setCurrentIndex(page->metricBox()->findData(static_cast<int>(OverviewMetric::Idle)));
    const RankOverview& o = page->view()->overview();
    QCOMPARE(o.rows.size(), size_t{8});
    QCOMPARE(o.iterations.size(), size_t{5});
    QCOMPARE(o.rows[0].rank, 5);
    QVERIFY2(page->headline().contains("Slowest: rank 5"), qPrintable(page->headline()));
  }
};

QTEST_MAIN(TestRanksPage)
#include "tst_ranks_page.moc"
