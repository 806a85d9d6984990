// The ranks' overview model: per rank, the mean of its iterations past the warm-up, in
// the order asked (slowest first), with the iterations it spans.
#include <QtTest/QtTest>

#include "ranks_fixture.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;
using namespace ddpscope::gui::ranks_fixture;

class TestRankOverview : public RanksTest {
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
};

DDPSCOPE_TEST_MAIN(TestRankOverview)
#include "tst_rank_overview.moc"
