// The timeline's data, fed from run files the test writes through the run store: lanes
// and rows, span lookup, live extension, stragglers. Its neighbours have tests of their
// own: tst_track_layout, tst_time_format, tst_ruler_ticks, tst_time_axis,
// tst_range_summary, tst_span_details.
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

// No two spans of a row of a lane overlap, and every row lies inside its lane's track,
// rows disjoint.
void checkRowsDisjoint(const TimelineData* data) {
  const TrackLayout layout = layoutTracks(*data, {}, 40);
  for (size_t l = 0; l < data->lanes.size(); ++l) {
    const TimelineLane& lane = data->lanes[l];
    std::map<int, int64_t> rowEnd;
    std::vector<TimelineSpan> all = lane.spans;
    all.insert(all.end(), lane.open.begin(), lane.open.end());
    std::stable_sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.begin_ns < b.begin_ns; });
    for (const auto& s : all) {
      QVERIFY(s.row < lane.rows);
      auto [it, fresh] = rowEnd.try_emplace(s.row, s.end_ns);
      if (!fresh) {
        QVERIFY2(it->second <= s.begin_ns,
                 qPrintable(QString("lane %1 row %2: overlap at %3").arg(l).arg(s.row).arg(s.begin_ns)));
        it->second = s.end_ns;
      }
    }
    const TrackRow& track = layout.rows[static_cast<size_t>(layout.lane_row[l])];
    for (int r = 0; r < lane.rows; ++r) {
      const int top = layout.rowTop(static_cast<int>(l), r);
      QVERIFY(top >= track.y && top + TrackLayout::kRowHeight <= layout.stripTop(static_cast<int>(l)));
      if (r > 0) QVERIFY(layout.rowTop(static_cast<int>(l), r - 1) + TrackLayout::kRowHeight <= top);
      QCOMPARE(layout.depthAt(layout.lane_row[l], top + 1), r);
    }
  }
  for (size_t i = 1; i < layout.rows.size(); ++i)
    QCOMPARE(layout.rows[i].y, layout.rows[i - 1].y + layout.rows[i - 1].height);
}

class TestTimelineData : public ScratchTest {
  Q_OBJECT

 private slots:
  void testTimelineLanesAndSpanLookup() {
    const std::string file = path("timeline.ddprun");
    testing::write_test_run(file, 2, 3);
    const RunData run = loadRun(file);
    const TimelineData& t = run.timeline;
    QCOMPARE(t.lanes.size(), size_t(4));
    QCOMPARE(t.lanes[0].label, std::string("rank 0 · compute"));
    QCOMPARE(t.lanes[1].label, std::string("rank 0 · comm"));
    QCOMPARE(t.begin_ns, int64_t(0));
    QCOMPARE(t.end_ns, int64_t(3000));
    QCOMPARE(t.iterations.size(), size_t(3));
    QCOMPARE(t.lanes[0].instants.size(), size_t(3));  // bucket-ready ticks
    // Innermost span under a time: finalize inside backward inside the iteration.
    const TimelineSpan* s = t.spanAt(0, 1750);
    QVERIFY(s);
    QCOMPARE(t.names[s->name], std::string("finalize"));
    s = t.spanAt(1, 1400);  // bucket 0's allreduce of iteration 2
    QVERIFY(s);
    QCOMPARE(s->bucket, int64_t(0));
    QCOMPARE(t.spanAt(1, 1600), nullptr);  // between the two allreduces
    QVERIFY(t.spanAt(1, 1600, 60));        // within slack of bucket 1's [1650, 1760]
    // Exposed communication: bucket 1's allreduce past the start of finalize, each
    // iteration, on the rank's compute lane only.
    QCOMPARE(t.lanes[0].exposed.size(), size_t(3));
    QCOMPARE(t.lanes[0].exposed[0].begin, int64_t(700));
    QCOMPARE(t.lanes[0].exposed[0].end, int64_t(760));
    QCOMPARE(t.lanes[1].exposed.size(), size_t(0));        // rank 0's comm lane
    QCOMPARE(t.lanes[2].exposed[2].begin, int64_t(2700));  // rank 1's compute lane, iteration 3
  }

  // A bucket's allreduce recorded on the compute thread, launched in
  // an autograd node and finished after backward, drew over backward. Rows by nesting,
  // outliving spans in rows of their own, an op that never finished open in its own.
  void testTimelineRowsNeverOverlap() {
    using namespace ddpscope::probes;
    const std::string file = path("rows.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      EventBatch b;
      b.rank = 0;
      b.threads = {{0, 100, "compute"}, {1, 101, "comm: world collectives"}};
      // The op and its start come from different call sites: different name ids.
      b.names = {"iteration",
                 "backward",
                 "node",
                 "allreduce",
                 "node2",
                 {"allreduce", "pg.cpp", 10},
                 {"allreduce", "pg_start.cpp", 20}};
      auto ev = [&](Kind kind, uint32_t name, int64_t t0, int64_t t1, int64_t seq, uint16_t thread) {
        b.events.push_back(BatchEvent{t0, t1, -1, seq, -1, 1, -1, name, -1, -1, thread, static_cast<uint8_t>(kind), 0});
      };
      ev(Kind::Iteration, 0, 0, 1000, -1, 0);
      ev(Kind::Backward, 1, 200, 800, -1, 0);
      ev(Kind::AutogradNode, 2, 300, 400, -1, 0);
      ev(Kind::Allreduce, 3, 350, 900, 0, 0);  // outlives node and backward
      ev(Kind::AutogradNode, 4, 500, 600, -1, 0);
      ev(Kind::PgOp, 5, 360, 880, 0, 1);  // finished
      ev(Kind::PgOpStart, 6, 360, 360, 0, 1);
      ev(Kind::PgOpStart, 6, 950, 950, 1, 1);  // never finished
      w.write(b);
      w.end_run("failed");
    }
    const RunData run = loadRun(file);
    const TimelineData& t = run.timeline;
    QCOMPARE(t.lanes.size(), size_t(2));
    const TimelineLane& compute = t.lanes[0];
    std::map<std::string, int> rowOf;
    for (const auto& s : compute.spans)
      rowOf[t.nameOf(s.name)] = s.row;
    QCOMPARE(rowOf["iteration"], 0);
    QCOMPARE(rowOf["backward"], 1);
    QCOMPARE(rowOf["node"], 2);
    QCOMPARE(rowOf["node2"], 2);      // still nested in backward: not pushed down by the allreduce
    QCOMPARE(rowOf["allreduce"], 3);  // below every nested row
    QCOMPARE(compute.rows, 4);
    const TimelineLane& comm = t.lanes[1];
    QCOMPARE(comm.open.size(), size_t(1));
    QCOMPARE(comm.open[0].seq, int64_t(1));
    QCOMPARE(comm.open[0].begin_ns, int64_t(950));
    QCOMPARE(comm.open[0].end_ns, t.end_ns);
    QCOMPARE(int(comm.open[0].row), 1);  // under the finished op's row
    QCOMPARE(comm.rows, 2);
    // The open op is what a click there finds, and its details say so.
    const TimelineSpan* open = t.spanAt(1, 990, 0, 1);
    QVERIFY(open == &comm.open[0]);
    const SpanDetails d = spanDetails(t, t.refOf(1, open));
    QVERIFY(d.unfinished);
    QCOMPARE(d.seq, int64_t(1));
    // The general rule, on this run and a regular one: no two spans of a row of a lane
    // overlap, and every row lies inside the lane's track, rows disjoint.
    testing::write_test_run(path("rows2.ddprun"), 2, 4);
    const RunData regular = loadRun(path("rows2.ddprun"));
    for (const TimelineData* data : {&t, &regular.timeline}) {
      checkRowsDisjoint(data);
    }
  }

  // A growing run: the timeline read again only for the new rows equals a fresh read.
  void testTimelineExtendsWithNewSpans() {
    const std::string file = path("growing.ddprun");
    ddpscope::probes::RunStoreWriter w(file);
    w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
    testing::write_iterations(w, 0, 1, 2);
    testing::write_iterations(w, 1, 1, 2);
    TimelineData grown;
    ddpscope::probes::RunAnalysis analysis;
    {
      ddpscope::probes::RunStoreReader r(file);
      grown = loadTimeline(r);
      analysis = ddpscope::probes::analyze_run(r);
    }
    QCOMPARE(analysis.iterations.size(), size_t(4));
    QCOMPARE(grown.iterations.size(), size_t(2));
    const int64_t first_rowid = grown.last_rowid;
    testing::write_iterations(w, 1, 3, 5);
    testing::write_iterations(w, 0, 3, 5);
    ddpscope::probes::RunStoreReader r(file);
    extendTimeline(grown, r);
    QVERIFY(grown.last_rowid > first_rowid);
    // The overlap analysis, continued from its resume point, equals a fresh one.
    ddpscope::probes::extend_analysis(analysis, r);
    const auto full = ddpscope::probes::analyze_run(r);
    QCOMPARE(analysis.iterations.size(), size_t(10));
    QCOMPARE(analysis.buckets.size(), full.buckets.size());
    for (size_t i = 0; i < full.iterations.size(); ++i) {
      QCOMPARE(analysis.iterations[i].rank, full.iterations[i].rank);
      QCOMPARE(analysis.iterations[i].iteration, full.iterations[i].iteration);
      QCOMPARE(analysis.iterations[i].exposed_comm_ms, full.iterations[i].exposed_comm_ms);
    }
    const TimelineData fresh = loadTimeline(r);
    QCOMPARE(grown.lanes.size(), fresh.lanes.size());
    QCOMPARE(grown.iterations, fresh.iterations);
    QCOMPARE(grown.begin_ns, fresh.begin_ns);
    QCOMPARE(grown.end_ns, fresh.end_ns);
    for (size_t i = 0; i < fresh.lanes.size(); ++i) {
      QCOMPARE(grown.lanes[i].label, fresh.lanes[i].label);
      QCOMPARE(grown.lanes[i].spans.size(), fresh.lanes[i].spans.size());
      QCOMPARE(grown.lanes[i].instants.size(), fresh.lanes[i].instants.size());
      for (size_t k = 0; k < fresh.lanes[i].spans.size(); ++k) {
        QCOMPARE(grown.lanes[i].spans[k].begin_ns, fresh.lanes[i].spans[k].begin_ns);
        QCOMPARE(grown.lanes[i].spans[k].end_ns, fresh.lanes[i].spans[k].end_ns);
        QCOMPARE(grown.lanes[i].spans[k].row, fresh.lanes[i].spans[k].row);
      }
      QCOMPARE(grown.lanes[i].rows, fresh.lanes[i].rows);
      // The level-of-detail blocks match a fresh read's, and their spans.
      QCOMPARE(grown.lanes[i].block_max_end, fresh.lanes[i].block_max_end);
      QCOMPARE(grown.lanes[i].block_row_kinds, fresh.lanes[i].block_row_kinds);
      const auto& spans = fresh.lanes[i].spans;
      QCOMPARE(fresh.lanes[i].block_max_end.size(), (spans.size() + TimelineLane::kBlock - 1) / TimelineLane::kBlock);
      for (size_t k = 0; k < spans.size(); ++k) {
        QVERIFY(spans[k].end_ns <= fresh.lanes[i].block_max_end[k / TimelineLane::kBlock]);
        // Each row of a block that holds a span names a kind present there.
        QVERIFY(spans[k].row >= TimelineLane::kLodRows ||
                fresh.lanes[i].block_row_kinds[k / TimelineLane::kBlock][spans[k].row] != TimelineLane::kNoKind);
      }
      QVERIFY(std::is_sorted(grown.lanes[i].spans.begin(), grown.lanes[i].spans.end(),
                             [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; }));
    }
    extendTimeline(grown, r);  // nothing new: nothing changes
    QCOMPARE(grown.lanes[0].spans.size(), fresh.lanes[0].spans.size());
  }

  void testStragglerIsMarked() {
    const std::string file = path("straggler.ddprun");
    testing::write_test_run(file, 3, 4, "finished", 100);  // rank 2 starts 100 ns late
    const RunData run = loadRun(file);
    const auto stragglers = ddpscope::probes::find_stragglers(run.analysis);
    QCOMPARE(int(stragglers.size()), 4);
    for (const auto& s : stragglers) {
      QCOMPARE(s.rank, 2);
      QCOMPARE(s.lag_ms, 100e-6);
    }
    OverlapModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(&run, 2);
    QCOMPARE(model.index(0, OverlapModel::Straggler).data().toString(), QString("straggler"));
    QCOMPARE(model.index(0, OverlapModel::StartLagMs).data(OverlapModel::ValueRole).toDouble(), 100e-6);
    QVERIFY(model.index(0, OverlapModel::Rank).data(Qt::BackgroundRole).isValid());
    model.setRun(&run, 0);
    QCOMPARE(model.index(0, OverlapModel::Straggler).data().toString(), QString());
    QCOMPARE(model.index(0, OverlapModel::StartLagMs).data(OverlapModel::ValueRole).toDouble(), 0.0);
    // 20 ns of 1000 is below the 5% threshold: noise, no straggler.
    testing::write_test_run(path("even.ddprun"), 2, 2, "finished", 20);
    QVERIFY(ddpscope::probes::find_stragglers(loadRun(path("even.ddprun")).analysis).empty());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTimelineData)
#include "tst_timeline_data.moc"
