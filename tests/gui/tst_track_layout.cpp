// TrackLayout: tracks of ranks and hosts, collapsed and expanded.
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

class TestTrackLayout : public ScratchTest {
  Q_OBJECT

 private slots:
  // Collapsed ranks and hosts keep their headers and hide their lanes; host headers only
  // with two hosts or more.
  void testTrackLayoutCollapsesRanksAndHosts() {
    testing::write_test_run(path("rows2.ddprun"), 2, 4);
    const RunData regular = loadRun(path("rows2.ddprun"));
    // Collapsing a rank keeps its header and hides its lanes.
    const TrackLayout folded = layoutTracks(regular.timeline, {0}, 40);
    QCOMPARE(folded.lane_row[0], -1);
    QCOMPARE(folded.lane_row[1], -1);
    QVERIFY(folded.lane_row[2] >= 0);
    QCOMPARE(folded.anchorY(0), 40 + TrackLayout::kGroupHeight / 2.0);
    // On two hosts (rank 1 on "b", rank 0 on "a"... listed the other way), a header per
    // host in the order of their lowest rank, its ranks below; a collapsed host hides its
    // ranks, whose flows attach to its header.
    TrackHosts hosts{{{0, "b"}, {1, "a"}}, {}};
    const TrackLayout grouped = layoutTracks(regular.timeline, {}, 40, hosts);
    QCOMPARE(grouped.rows[0].type, TrackRow::Type::Host);
    QCOMPARE(grouped.rows[0].host, std::string("b"));
    QCOMPARE(grouped.rows[0].ranks, 1);
    QCOMPARE(grouped.rows[1].type, TrackRow::Type::Group);
    QCOMPARE(grouped.rows[1].rank, 0);
    const auto host_a = std::find_if(grouped.rows.begin(), grouped.rows.end(),
                                     [](const TrackRow& r) { return r.type == TrackRow::Type::Host && r.host == "a"; });
    QVERIFY(host_a != grouped.rows.end());
    QCOMPARE(std::next(host_a)->rank, 1);
    hosts.collapsed = {"b"};
    const TrackLayout hidden = layoutTracks(regular.timeline, {}, 40, hosts);
    QCOMPARE(hidden.lane_row[0], -1);
    QCOMPARE(hidden.rows[static_cast<size_t>(hidden.group_row[0])].type, TrackRow::Type::Host);
    QCOMPARE(hidden.anchorY(0), 40 + TrackLayout::kGroupHeight / 2.0);
    QVERIFY(hidden.lane_row[2] >= 0);
    QCOMPARE(hidden.rows[1].type, TrackRow::Type::Host);  // "a" right below the folded "b"
    // One host: no host headers.
    const TrackLayout single = layoutTracks(regular.timeline, {}, 40, TrackHosts{{{0, "a"}, {1, "a"}}, {}});
    QCOMPARE(single.rows[0].type, TrackRow::Type::Group);
  }
};

DDPSCOPE_TEST_MAIN(TestTrackLayout)
#include "tst_track_layout.moc"
