// The desktop app's models, fed from run files the test writes through the run store,
// each under QAbstractItemModelTester; and the time <-> pixel mapping of the views.
#include <QtTest/QtTest>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QTemporaryDir>
#include <map>
#include <set>

#include "bucket_table_model.h"
#include "csv_export.h"
#include "graph_data.h"
#include "graph_layout.h"
#include "gui_test_runs.h"
#include "launch_config.h"
#include "ddp_lesson.h"
#include "lesson.h"
#include "overlap_model.h"
#include "parameter_bucket_model.h"
#include "run_data.h"
#include "run_list_model.h"
#include "sequence_data.h"
#include "range_summary.h"
#include "ruler_ticks.h"
#include "sort_proxy.h"
#include "span_details.h"
#include "sqlite_db.h"
#include "time_axis.h"
#include "time_breakdown.h"
#include "time_format.h"
#include "timeline_search.h"
#include "track_layout.h"

using namespace ddpscope::gui;

class TestGuiModels : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path(const char* name) { return dir_.filePath(name).toStdString(); }

 private slots:
  void testRunListShowsEveryRunAndExplainsBadOnes() {
    QTemporaryDir folder;
    testing::write_test_run(folder.filePath("a.ddprun").toStdString(), 2, 3);
    testing::write_test_run(folder.filePath("b.ddprun").toStdString(), 4, 2, "failed");
    QFile garbage(folder.filePath("c.ddprun"));
    QVERIFY(garbage.open(QIODevice::WriteOnly));
    garbage.write(QByteArray(4096, 'x'));
    garbage.close();
    RunListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setFolder(folder.path());
    QCOMPARE(model.rowCount(), 3);
    QMap<QString, int> rowOf;
    for (int r = 0; r < model.rowCount(); ++r)
      rowOf[model.index(r, RunListModel::Name).data().toString()] = r;
    QCOMPARE(model.index(rowOf["a.ddprun"], RunListModel::Status).data().toString(),
             QString("finished"));
    QCOMPARE(model.index(rowOf["a.ddprun"], RunListModel::WorldSize).data().toInt(), 2);
    QCOMPARE(model.index(rowOf["a.ddprun"], RunListModel::Model).data().toString(), QString("mlp"));
    QVERIFY(!model.index(rowOf["a.ddprun"], RunListModel::Started).data().toString().isEmpty());
    QCOMPARE(model.index(rowOf["b.ddprun"], RunListModel::Status).data().toString(),
             QString("failed"));
    QCOMPARE(model.index(rowOf["c.ddprun"], RunListModel::Status).data().toString(),
             QString("unreadable"));
    QVERIFY(model.index(rowOf["c.ddprun"], RunListModel::Name)
                .data(Qt::ToolTipRole)
                .toString()
                .contains("not a ddpscope run file"));
    QCOMPARE(model.index(0, 0).data(RunListModel::PathRole).toString().isEmpty(), false);
    // A new run appears on refresh.
    testing::write_test_run(folder.filePath("d.ddprun").toStdString(), 1, 1);
    model.refresh();
    QCOMPARE(model.rowCount(), 4);
  }

  void testOverlapModelPerRank() {
    const std::string file = path("overlap.ddprun");
    testing::write_test_run(file, 2, 5);
    const RunData run = load_run(file);
    OverlapModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(&run);
    QCOMPARE(model.rowCount(), 10);
    model.setRun(&run, 1);
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(model.index(0, OverlapModel::Rank).data().toInt(), 1);
    QCOMPARE(model.index(2, OverlapModel::Iteration).data().toInt(), 3);
    QCOMPARE(model.index(0, OverlapModel::CommMs).data(OverlapModel::ValueRole).toDouble(), 310e-6);
    QCOMPARE(model.index(0, OverlapModel::ExposedMs).data(OverlapModel::ValueRole).toDouble(),
             60e-6);
    QVERIFY(
        std::fabs(
            model.index(0, OverlapModel::OverlapRatio).data(OverlapModel::ValueRole).toDouble() -
            (1 - 60.0 / 310.0)) < 1e-9);
    QCOMPARE(model.index(0, OverlapModel::OverlapRatio).data().toString(), QString("0.81"));
    model.setRun(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  void testBucketTableOfOneIteration() {
    const std::string file = path("buckets.ddprun");
    testing::write_test_run(file, 2, 4);
    const RunData run = load_run(file);
    BucketTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(&run, 1, 3);
    QCOMPARE(model.rowCount(), 2);
    // Times are from the start of backward (iteration 3's at 2200 ns), with units; the
    // queue delay is from ready to start; kSortRole gives ns.
    QCOMPARE(model.index(1, BucketTableModel::Bucket).data().toInt(), 1);
    QCOMPARE(model.index(1, BucketTableModel::Ready).data().toString(), QString("440 ns"));
    QCOMPARE(model.index(1, BucketTableModel::QueueDelay).data().toString(), QString("10 ns"));
    QCOMPARE(model.index(1, BucketTableModel::QueueDelay).data(kSortRole).toLongLong(), 10);
    QCOMPARE(model.index(0, BucketTableModel::Start).data().toString(), QString("100 ns"));
    QCOMPARE(model.index(0, BucketTableModel::QueueDelay).data().toString(), QString());  // never marked ready
    QCOMPARE(model.index(1, BucketTableModel::Duration).data(kSortRole).toLongLong(), 110);
    QVERIFY(model.headerData(BucketTableModel::Ready, Qt::Horizontal).toString().contains("after backward start"));
    QCOMPARE(model.index(1, BucketTableModel::Parameters).data().toString(), QString("1: b"));
    QCOMPARE(model.index(0, BucketTableModel::Parameters).data().toString(), QString("1: w"));
    QVERIFY(model.index(0, BucketTableModel::Bytes).data().toString().contains("4"));
    model.setRun(&run, 0, 99);  // no such iteration
    QCOMPARE(model.rowCount(), 0);
  }

  void testTimelineLanesAndSpanLookup() {
    const std::string file = path("timeline.ddprun");
    testing::write_test_run(file, 2, 3);
    const RunData run = load_run(file);
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
      b.names = {"iteration", "backward", "node", "allreduce", "node2", {"allreduce", "pg.cpp", 10},
                 {"allreduce", "pg_start.cpp", 20}};
      auto ev = [&](Kind kind, uint32_t name, int64_t t0, int64_t t1, int64_t seq, uint16_t thread) {
        b.events.push_back(BatchEvent{t0, t1, -1, seq, -1, 1, -1, name, -1, -1, thread, static_cast<uint8_t>(kind), 0});
      };
      ev(Kind::Iteration, 0, 0, 1000, -1, 0);
      ev(Kind::Backward, 1, 200, 800, -1, 0);
      ev(Kind::AutogradNode, 2, 300, 400, -1, 0);
      ev(Kind::Allreduce, 3, 350, 900, 0, 0);  // outlives node and backward
      ev(Kind::AutogradNode, 4, 500, 600, -1, 0);
      ev(Kind::PgOp, 5, 360, 880, 0, 1);       // finished
      ev(Kind::PgOpStart, 6, 360, 360, 0, 1);
      ev(Kind::PgOpStart, 6, 950, 950, 1, 1);  // never finished
      w.write(b);
      w.end_run("failed");
    }
    const RunData run = load_run(file);
    const TimelineData& t = run.timeline;
    QCOMPARE(t.lanes.size(), size_t(2));
    const TimelineLane& compute = t.lanes[0];
    std::map<std::string, int> rowOf;
    for (const auto& s : compute.spans) rowOf[t.name_of(s.name)] = s.row;
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
    const SpanDetails d = span_details(t, t.refOf(1, open));
    QVERIFY(d.unfinished);
    QCOMPARE(d.seq, int64_t(1));
    // The general rule, on this run and a regular one: no two spans of a row of a lane
    // overlap, and every row lies inside the lane's track, rows disjoint.
    testing::write_test_run(path("rows2.ddprun"), 2, 4);
    const RunData regular = load_run(path("rows2.ddprun"));
    for (const TimelineData* data : {&t, &regular.timeline}) {
      const TrackLayout layout = layout_tracks(*data, {}, 40);
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
            QVERIFY2(it->second <= s.begin_ns, qPrintable(QString("lane %1 row %2: overlap at %3").arg(l).arg(s.row).arg(s.begin_ns)));
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
    // Collapsing a rank keeps its header and hides its lanes.
    const TrackLayout folded = layout_tracks(regular.timeline, {0}, 40);
    QCOMPARE(folded.lane_row[0], -1);
    QCOMPARE(folded.lane_row[1], -1);
    QVERIFY(folded.lane_row[2] >= 0);
    QCOMPARE(folded.anchorY(0), 40 + TrackLayout::kGroupHeight / 2.0);
  }

  void testDurationsAndRulerLabels() {
    QCOMPARE(format_duration(850), std::string("850 ns"));
    QCOMPARE(format_duration(12'400), std::string("12.4 µs"));
    QCOMPARE(format_duration(3'210'000), std::string("3.21 ms"));
    QCOMPARE(format_duration(1'500'000'000), std::string("1.50 s"));
    QCOMPARE(format_duration(250'000'000), std::string("250 ms"));
    // Ruler: at every zoom from a 2 µs window to a 100 s one, in a 1400 px view, labels
    // measured at 7 px a character never collide, units follow the zoom and neighbours
    // never read the same.
    const auto width = [](const std::string& s) { return 7.0 * static_cast<double>(QString::fromStdString(s).size()); };
    for (double window = 2e3; window <= 1e11; window *= 3.7) {
      for (int64_t origin : {int64_t{0}, int64_t{12'300'000'000}}) {
        TimeAxis axis{origin + 1234, origin + 1234 + static_cast<int64_t>(window), 1400};
        const RulerTicks ticks = ruler_ticks(axis, 0, width);
        QVERIFY2(ticks.ticks.size() >= 2, qPrintable(QString("window %1: %2 ticks").arg(window).arg(ticks.ticks.size())));
        for (size_t i = 1; i < ticks.ticks.size(); ++i) {
          QVERIFY(ticks.ticks[i].x - ticks.ticks[i - 1].x >= width(ticks.ticks[i - 1].label) + 12 - 1e-6);
          QVERIFY2(ticks.ticks[i].label != ticks.ticks[i - 1].label, ticks.ticks[i].label.c_str());
        }
      }
    }
    TimeAxis seconds{0, 60'000'000'000, 1400};
    QVERIFY(ruler_ticks(seconds, 0, width).ticks[1].label.find(" s") != std::string::npos);
    TimeAxis micro{5'000, 25'000, 1400};
    QCOMPARE(ruler_ticks(micro, 0, width).ticks[0].label.substr(ruler_ticks(micro, 0, width).ticks[0].label.size() - 3), std::string("µs"));
  }

  // A dragged range's sums equal SQL over the same range of the run file.
  void testRangeSumsEqualSql() {
    const std::string file = path("range.ddprun");
    testing::write_test_run(file, 2, 5, "finished", 37);
    const RunData run = load_run(file);
    for (auto [a, b] : {std::pair<int64_t, int64_t>{1250, 3710}, {0, 5037}, {640, 641}, {4999, 4000}}) {
      const RangeSummary sum = summarize_range(run.timeline, a, b);
      std::map<std::pair<int, std::string>, std::pair<int64_t, int64_t>> mine;
      for (const RangeRow& r : sum.rows) mine[{static_cast<int>(r.kind), r.name}] = {r.count, r.total_ns};
      ddpscope::probes::SqliteDb db(file, SQLITE_OPEN_READONLY);
      auto q = db.prepare(
          "SELECT s.kind, n.name, COUNT(*), SUM(MIN(s.t_end_ns, ?2) - MAX(s.t_begin_ns, ?1)) FROM spans s "
          "JOIN names n ON n.name_id = s.name_id WHERE s.t_end_ns > ?1 AND s.t_begin_ns < ?2 "
          "AND s.t_end_ns > s.t_begin_ns GROUP BY s.kind, n.name");
      q.bind(1, std::min(a, b)).bind(2, std::max(a, b));
      std::map<std::pair<int, std::string>, std::pair<int64_t, int64_t>> sql;
      while (q.step()) sql[{static_cast<int>(q.column_int64(0)), q.column_text(1)}] = {q.column_int64(2), q.column_int64(3)};
      QVERIFY(!sql.empty());
      QCOMPARE(mine, sql);
      for (size_t i = 1; i < sum.rows.size(); ++i) QVERIFY(sum.rows[i - 1].total_ns >= sum.rows[i].total_ns);
    }
  }

  // The details of a selected span equal its row in the run file; search finds names,
  // buckets and parameters.
  void testSpanDetailsMatchTheRunFileAndSearch() {
    const std::string file = path("details.ddprun");
    testing::write_test_run(file, 2, 3);
    const RunData run = load_run(file);
    const TimelineData& t = run.timeline;
    ddpscope::probes::SqliteDb db(file, SQLITE_OPEN_READONLY);
    int checked = 0;
    for (size_t l = 0; l < t.lanes.size(); ++l) {
      for (int64_t k = 0; k < static_cast<int64_t>(t.lanes[l].spans.size()); ++k) {
        const SpanDetails d = span_details(t, {static_cast<int>(l), k, SpanRef::In::Spans});
        auto q = db.prepare(
            "SELECT s.rank, th.name, s.kind, n.name, s.t_begin_ns, s.t_end_ns, IFNULL(s.iteration, -1), "
            "IFNULL(s.bucket, -1), IFNULL(s.bytes, -1), IFNULL(s.seq, -1), IFNULL(s.param, -1) FROM spans s "
            "JOIN names n ON n.name_id = s.name_id JOIN threads th ON th.rank = s.rank AND th.thread = s.thread "
            "WHERE s.rowid = ?1");
        q.bind(1, d.rowid);
        QVERIFY(q.step());
        QCOMPARE(d.rank, static_cast<int>(q.column_int64(0)));
        QCOMPARE(d.thread, q.column_text(1));
        QCOMPARE(d.kind, std::string(ddpscope::probes::kind_name(static_cast<ddpscope::probes::Kind>(q.column_int64(2)))));
        QCOMPARE(d.name, q.column_text(3));
        QCOMPARE(d.begin_ns, q.column_int64(4));
        QCOMPARE(d.duration_ns, q.column_int64(5) - q.column_int64(4));
        QCOMPARE(d.iteration, q.column_int64(6));
        QCOMPARE(d.bucket, q.column_int64(7));
        QCOMPARE(d.bytes, q.column_int64(8));
        QCOMPARE(d.seq, q.column_int64(9));
        QCOMPARE(d.param, q.column_int64(10));
        ++checked;
      }
    }
    QCOMPARE(checked, 2 * 3 * 7);
    // Finalize of iteration 2 on rank 0: its parent is backward, backward's parent the
    // iteration, whose children are forward, backward and the optimizer.
    const TimelineLane& compute = t.lanes[0];
    int64_t finalize = -1;
    for (size_t k = 0; k < compute.spans.size(); ++k)
      if (t.name_of(compute.spans[k].name) == "finalize" && compute.spans[k].iteration == 2) finalize = static_cast<int64_t>(k);
    const SpanDetails f = span_details(t, {0, finalize, SpanRef::In::Spans});
    QCOMPARE(t.name_of(t.resolve(f.parent)->name), std::string("backward"));
    const SpanDetails it = span_details(t, span_details(t, f.parent).parent);
    QCOMPARE(it.kind, std::string("iteration"));
    QCOMPARE(it.children.size(), size_t(3));
    // A bucket allreduce: the same sequence number on the other rank.
    const SpanDetails ar = span_details(t, {1, 2, SpanRef::In::Spans});
    QCOMPARE(ar.kind, std::string("allreduce"));
    QCOMPARE(ar.same_collective.size(), size_t(1));
    const TimelineSpan* other = t.resolve(ar.same_collective[0]);
    QCOMPARE(other->seq, ar.seq);
    QCOMPARE(t.lanes[static_cast<size_t>(ar.same_collective[0].lane)].rank, 1);
    // Search: names, any case; buckets; parameters (bucket-ready marks carry no param
    // here, so the parameter "w" finds nothing but does not fail).
    const SearchResults byName = search_timeline(t, "FINAL");
    QCOMPARE(byName.matches.size(), size_t(6));
    for (size_t i = 1; i < byName.matches.size(); ++i)
      QVERIFY(t.resolve(byName.matches[i - 1])->begin_ns <= t.resolve(byName.matches[i])->begin_ns);
    const SearchResults byBucket = search_timeline(t, "bucket 1");
    QCOMPARE(byBucket.matches.size(), size_t(2 * 3 * 2));  // allreduces and ready marks
    for (const SpanRef& r : byBucket.matches) QCOMPARE(t.resolve(r)->bucket, 1);
    QCOMPARE(search_timeline(t, "nothing like it").matches.size(), size_t(0));
    QCOMPARE(search_timeline(t, "  ").matches.size(), size_t(0));
  }

  // "Where the time went": the parts add up to the iteration; the test run's numbers.
  void testTimeBreakdownAddsUp() {
    const std::string file = path("breakdown.ddprun");
    testing::write_test_run(file, 2, 5, "finished", 100);  // rank 1 starts its allreduces 100 ns late
    const RunData run = load_run(file);
    const auto rows = breakdown_by_iteration(run.analysis);
    QCOMPARE(rows.size(), size_t(10));
    for (const auto& r : rows) {
      QVERIFY(std::abs(r.forward_ms + r.backward_ms + r.exposed_comm_ms + r.optimizer_ms + r.idle_ms - r.iteration_ms) < 1e-9);
      QCOMPARE(r.straggler, r.rank == 1);
    }
    // Rank 0: forward 200 ns, backward 600 less finalize 100, exposed 60 (bucket 1 past
    // finalize's start), hidden 250, optimizer 100, idle the other 140.
    const TimeBreakdown& r0 = rows[0];
    QCOMPARE(r0.rank, 0);
    QVERIFY(std::abs(r0.forward_ms - 200e-6) < 1e-12);
    QVERIFY(std::abs(r0.backward_ms - 500e-6) < 1e-12);
    QVERIFY(std::abs(r0.exposed_comm_ms - 60e-6) < 1e-12);
    QVERIFY(std::abs(r0.hidden_comm_ms - 250e-6) < 1e-12);
    QVERIFY(std::abs(r0.optimizer_ms - 100e-6) < 1e-12);
    QVERIFY(std::abs(r0.idle_ms - 140e-6) < 1e-12);
    const auto means = breakdown_by_rank(rows);
    QCOMPARE(means.size(), size_t(2));
    QCOMPARE(means[0].iterations, int64_t(4));  // the first left out
    QCOMPARE(means[1].straggled, int64_t(5));
    QCOMPARE(main_straggler(means), 1);
    QVERIFY(std::abs(means[0].iteration_ms - 1000e-6) < 1e-12);
  }

  void testTimeAxisMapping() {
    TimeAxis a{100'000, 200'000, 100};  // 1000 ns per pixel
    QCOMPARE(a.ns_per_px(), 1000.0);
    QCOMPARE(a.to_px(150'000), 50.0);
    QCOMPARE(a.to_ns(25), int64_t(125'000));
    a.zoom(2, 25);  // the time under pixel 25 stays there
    QCOMPARE(a.to_ns(25), int64_t(125'000));
    QCOMPARE(a.end_ns - a.begin_ns, int64_t(50'000));
    a.pan(10);  // 500 ns per pixel now
    QCOMPARE(a.to_ns(25), int64_t(130'000));
    a.zoom(1e9, 0);  // never narrower than the minimum span
    QCOMPARE(a.end_ns - a.begin_ns, TimeAxis::kMinSpanNs);
    a.fit(0, 1'000'000, 0.0);
    QCOMPARE(a.begin_ns, int64_t(0));
    QCOMPARE(a.end_ns, int64_t(1'000'000));
    a.zoom(0.5, 50);  // out
    QCOMPARE(a.end_ns - a.begin_ns, int64_t(2'000'000));
  }

  // A loss that turned NaN is stored (SQLite would turn a NaN REAL into NULL), read back
  // as NaN, and the run says where it started and which gradient was first.
  void testNonFiniteLossIsKeptAndNamed() {
    const std::string file = path("nan.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      testing::write_iterations(w, 0, 1, 3);
      testing::write_iterations(w, 1, 1, 3);
      using ddpscope::probes::Kind;
      for (int rank : {0, 1}) {
        ddpscope::probes::EventBatch b;
        b.rank = rank;
        b.threads = {{0, 100, "compute"}};
        b.names = {"non-finite loss: nan", "non-finite gradient: layers.0.weight"};
        // Rank 1 sees it first (earlier on the common clock).
        const int64_t t = rank == 1 ? 2100 : 2300;
        b.events.push_back({t, t, -1, -1, -1, 3, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Mark), 0});
        b.events.push_back({t - 50, t - 50, -1, -1, -1, 3, 0, 1, -1, -1, 0, static_cast<uint8_t>(Kind::Mark), 0});
        for (int it = 1; it <= 3; ++it) {
          const std::string value = it < 3 ? "0.5" : R"("nan")";
          b.records.push_back(R"({"type":"metric","name":"loss","iteration":)" + std::to_string(it) +
                              R"(,"value":)" + value + "}");
        }
        b.records.push_back(R"({"type":"metric","name":"loss","iteration":4,"value":"inf"})");
        w.write(b);
      }
      w.end_run("finished");
    }
    const RunData d = load_run(file);
    std::vector<double> rank0;
    for (const auto& m : d.metrics)
      if (m.name == "loss" && m.rank == 0) rank0.push_back(m.value);
    QCOMPARE(rank0.size(), size_t{4});  // nothing skipped
    QCOMPARE(rank0[1], 0.5);
    QVERIFY(std::isnan(rank0[2]));
    QVERIFY(std::isinf(rank0[3]) && rank0[3] > 0);
    QCOMPARE(d.nonfinite_loss_iteration, int64_t{3});
    QCOMPARE(QString::fromStdString(d.nonfinite),
             QString("The loss became nan in iteration 3 (first on rank 1). The first gradient that was "
                     "not finite: layers.0.weight on rank 1 in iteration 3."));
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
      grown = load_timeline(r);
      analysis = ddpscope::probes::analyze_run(r);
    }
    QCOMPARE(analysis.iterations.size(), size_t(4));
    QCOMPARE(grown.iterations.size(), size_t(2));
    const int64_t first_rowid = grown.last_rowid;
    testing::write_iterations(w, 1, 3, 5);
    testing::write_iterations(w, 0, 3, 5);
    ddpscope::probes::RunStoreReader r(file);
    extend_timeline(grown, r);
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
    const TimelineData fresh = load_timeline(r);
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
      QCOMPARE(fresh.lanes[i].block_max_end.size(),
               (spans.size() + TimelineLane::kBlock - 1) / TimelineLane::kBlock);
      for (size_t k = 0; k < spans.size(); ++k) {
        QVERIFY(spans[k].end_ns <= fresh.lanes[i].block_max_end[k / TimelineLane::kBlock]);
        // Each row of a block that holds a span names a kind present there.
        QVERIFY(spans[k].row >= TimelineLane::kLodRows ||
                fresh.lanes[i].block_row_kinds[k / TimelineLane::kBlock][spans[k].row] != TimelineLane::kNoKind);
      }
      QVERIFY(std::is_sorted(grown.lanes[i].spans.begin(), grown.lanes[i].spans.end(),
                             [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; }));
    }
    extend_timeline(grown, r);  // nothing new: nothing changes
    QCOMPARE(grown.lanes[0].spans.size(), fresh.lanes[0].spans.size());
  }

  void testStragglerIsMarked() {
    const std::string file = path("straggler.ddprun");
    testing::write_test_run(file, 3, 4, "finished", 100);  // rank 2 starts 100 ns late
    const RunData run = load_run(file);
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
    QCOMPARE(model.index(0, OverlapModel::StartLagMs).data(OverlapModel::ValueRole).toDouble(),
             100e-6);
    QVERIFY(model.index(0, OverlapModel::Rank).data(Qt::BackgroundRole).isValid());
    model.setRun(&run, 0);
    QCOMPARE(model.index(0, OverlapModel::Straggler).data().toString(), QString());
    QCOMPARE(model.index(0, OverlapModel::StartLagMs).data(OverlapModel::ValueRole).toDouble(),
             0.0);
    // 20 ns of 1000 is below the 5% threshold: noise, no straggler.
    testing::write_test_run(path("even.ddprun"), 2, 2, "finished", 20);
    QVERIFY(ddpscope::probes::find_stragglers(load_run(path("even.ddprun")).analysis).empty());
  }

  void testBucketReadyOrderAndParameterMap() {
    const std::string file = path("rebuilt.ddprun");
    testing::write_test_run(file, 1, 3, "finished", 0, true);
    const RunData run = load_run(file);
    BucketTableModel buckets;
    QAbstractItemModelTester t1(&buckets, QAbstractItemModelTester::FailureReportingMode::QtTest);
    buckets.setRun(&run, 0, 2);
    // Only bucket 1 records a ready instant: it is first ready; bucket 0 never is.
    QCOMPARE(buckets.index(1, BucketTableModel::ReadyOrder).data().toInt(), 1);
    QCOMPARE(buckets.index(0, BucketTableModel::ReadyOrder).data().toString(), QString("–"));
    ParameterBucketModel params;
    QAbstractItemModelTester t2(&params, QAbstractItemModelTester::FailureReportingMode::QtTest);
    params.setRun(&run, 0);
    QVERIFY(params.rebuilt());
    QCOMPARE(params.rowCount(), 2);
    QCOMPARE(params.index(0, ParameterBucketModel::Name).data().toString(), QString("w"));
    QCOMPARE(params.index(0, ParameterBucketModel::Shape).data().toString(), QString("f32[32,32]"));
    QCOMPARE(params.index(0, ParameterBucketModel::BucketBefore).data().toInt(), 0);
    QCOMPARE(params.index(0, ParameterBucketModel::BucketAfter).data().toInt(), 1);
    QCOMPARE(params.index(1, ParameterBucketModel::BucketAfter).data().toInt(), 0);
    QVERIFY(params.index(0, ParameterBucketModel::Bytes).data().toString().contains("4"));
    params.setRun(nullptr, 0);
    QCOMPARE(params.rowCount(), 0);
  }

  void testCsvOfATable() {
    const std::string file = path("csv.ddprun");
    testing::write_test_run(file, 1, 2);
    const RunData run = load_run(file);
    BucketTableModel model;
    model.setRun(&run, 0, 1);
    const QStringList lines = to_csv(model).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);  // header + 2 buckets
    QVERIFY(lines[0].startsWith("Bucket,Ready order,Bytes"));
    QVERIFY2(lines[2].endsWith(",1: b"), qPrintable(lines[2]));
    QString error;
    const QString out = dir_.filePath("buckets.csv");
    QVERIFY(write_csv(model, out, &error));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(f.readAll()), to_csv(model));
    QVERIFY(!write_csv(model, "/nonexistent/dir/x.csv", &error));
    QVERIFY2(error.contains("/nonexistent/dir/x.csv"), qPrintable(error));
  }

  void testLaunchConfigValidation() {
    LaunchConfig good;
    QVERIFY(validate(good).isEmpty());
    auto problem = [](auto change) {
      LaunchConfig c;
      change(c);
      return validate(c);
    };
    QVERIFY(problem([](LaunchConfig& c) { c.worldSize = 0; }).contains("world_size"));
    QVERIFY(problem([](LaunchConfig& c) { c.iterations = 0; }).contains("iterations"));
    QVERIFY(problem([](LaunchConfig& c) { c.batch = 0; }).contains("batch"));
    QVERIFY(problem([](LaunchConfig& c) { c.bucketCapMb = 0; }).contains("bucket_cap_mb"));
    QVERIFY(problem([](LaunchConfig& c) { c.model = "resnet"; }).contains("model"));
    QVERIFY(problem([](LaunchConfig& c) { c.commHook = "int8"; }).contains("comm_hook"));
    QVERIFY(problem([](LaunchConfig& c) { c.hostfile = "/no/such/hosts"; })
                .value("hostfile")
                .contains("/no/such/hosts"));
    QVERIFY(problem([](LaunchConfig& c) {
              c.model = "transformer";
              c.width = 30;
            })
                .value("width")
                .contains("divisible"));
    QVERIFY(problem([](LaunchConfig& c) { c.backend = "nccl"; }).contains("backend"));
    QVERIFY(problem([](LaunchConfig& c) { c.extraArguments = "--np 8"; })
                .value("extra_arguments")
                .contains("--np"));
    QVERIFY(
        problem([](LaunchConfig& c) { c.extraArguments = "lr 0.1"; }).contains("extra_arguments"));
    QVERIFY(problem([](LaunchConfig& c) { c.extraArguments = "--lr 0.01"; }).isEmpty());
    // The head count the width must divide is the one the job will use.
    auto transformer = [&](int width, const char* extra) {
      return problem([&](LaunchConfig& c) {
        c.model = "transformer";
        c.width = width;
        c.extraArguments = extra;
      });
    };
    QVERIFY(transformer(36, "--heads 6").isEmpty());
    QVERIFY(transformer(36, "--heads=6").isEmpty());
    QVERIFY(transformer(30, "").value("width").contains("its 4 heads"));
    QVERIFY(transformer(32, "--heads 6").value("width").contains("its 6 heads"));
    QVERIFY(transformer(32, "--heads 0").value("extra_arguments").contains("--heads"));
  }

  void testPresetsRoundTripAndRefuseBadFiles() {
    LaunchConfig c;
    c.model = "transformer";
    c.worldSize = 4;
    c.bucketCapMb = 5.5;
    c.staticGraph = true;
    c.fusedOptimizer = true;
    c.commHook = "powersgd";
    c.probes = false;
    c.extraArguments = "--lr 0.01";
    QString error;
    const QString file = dir_.filePath("preset.json");
    QVERIFY(savePreset(c, file, &error));
    LaunchConfig back;
    QVERIFY2(loadPreset(file, &back, &error), qPrintable(error));
    QCOMPARE(toJson(back), toJson(c));
    const QStringList args = trainArguments(back, "/tmp/x.ddprun");
    QVERIFY(args.join(' ').contains("train --np 4 --backend mpi --model transformer"));
    QVERIFY(args.contains("--static-graph"));
    QVERIFY(args.contains("--fused-optimizer"));
    QVERIFY(!trainArguments(LaunchConfig{}, "/tmp/x.ddprun").contains("--fused-optimizer"));
    QVERIFY(args.contains("--no-probes") && !args.contains("--out"));
    QCOMPARE(args[args.indexOf("--comm-hook") + 1], QString("powersgd"));
    QCOMPARE(args[args.indexOf("--bucket-cap-mb") + 1], QString("5.5"));
    QCOMPARE(args[args.indexOf("--progress") + 1], QString("json"));
    QCOMPARE(args[args.indexOf("--lr") + 1], QString("0.01"));

    auto write = [&](const QString& name, const QByteArray& text) {
      QFile f(dir_.filePath(name));
      f.open(QIODevice::WriteOnly);
      f.write(text);
      return f.fileName();
    };
    QVERIFY(!loadPreset(write("garbage.json", "{not json"), &back, &error));
    QVERIFY2(error.contains("not a preset"), qPrintable(error));
    QVERIFY(!loadPreset(write("type.json", R"({"world_size": "four"})"), &back, &error));
    QVERIFY2(error.contains("world_size") && error.contains("whole number"), qPrintable(error));
    QVERIFY(!loadPreset(dir_.filePath("missing.json"), &back, &error));
    QVERIFY(error.contains("cannot read"));
    // Missing keys keep their defaults.
    QVERIFY(loadPreset(write("partial.json", R"({"iterations": 7})"), &back, &error));
    QCOMPARE(back.iterations, 7);
    QCOMPARE(back.worldSize, LaunchConfig{}.worldSize);
  }

  void testGraphCollapseAndLayout() {
    // loss -> linear2 -> {acc(l2.weight), relu -> linear1 -> acc(l1.weight)}
    GraphData g;
    g.nodes = {{0, "MseLossBackward", "operation", 0, 10, 0.5, {}, 1},
               {1, "LinearBackward", "operation", 1, 9, 0.2, {}, 1},
               {2, "AccumulateGrad(net.l2.weight)", "accumulate_grad", 1, 8, 0.01, {}, 1},
               {3, "ReluBackward", "operation", 1, 7, 0.1, {}, 1},
               {4, "LinearBackward", "operation", 1, 6, 0.3, {}, 1},
               {5, "AccumulateGrad(net.l1.weight)", "accumulate_grad", 1, 5, 0.02, {}, 1}};
    g.edges = {{0, 1}, {1, 2}, {1, 3}, {3, 4}, {4, 5}};
    QCOMPARE(module_of_parameter("net.l2.weight"), std::string("net.l2"));
    const GraphData c = collapse_by_module(g);
    QVERIFY(c.collapsed);
    // Operations join the module their gradient reaches first: relu's gradient flows
    // into linear1, so it joins net.l1; the loss and linear2 reach net.l2's weight.
    std::map<std::string, const GraphNode*> by_name;
    for (const auto& n : c.nodes)
      by_name[n.op] = &n;
    QVERIFY(by_name.count("net.l1") && by_name.count("net.l2"));
    QCOMPARE(by_name["net.l1"]->members, int64_t(3));  // relu, linear1, its accumulator
    QCOMPARE(by_name["net.l2"]->members, int64_t(3));  // loss, linear2, its accumulator
    QCOMPARE(by_name["net.l2"]->exec_ms, 0.5 + 0.2 + 0.01);
    QCOMPARE(int(c.edges.size()), 1);  // net.l2 -> net.l1, no self-loops
    const GraphLayout layout = layout_graph(g);
    QVERIFY2(layout.error.empty(), layout.error.c_str());
    QCOMPARE(layout.nodes.size(), g.nodes.size());
    QCOMPARE(layout.edges.size(), g.edges.size());
    // Top to bottom: gradients flow down from the loss.
    QVERIFY(layout.nodes[0].y < layout.nodes[1].y);
    QVERIFY(layout.nodes[1].y < layout.nodes[4].y);
    QVERIFY(layout.nodes[4].y < layout.nodes[5].y);
    QVERIFY(layout.nodes[2].w > layout.nodes[1].w);  // the longer label is wider
    for (const auto& e : layout.edges)
      QVERIFY(e.points.size() >= 4);
    QVERIFY(node_label(g.nodes[1]).find("deps 1") != std::string::npos);
  }

  // A small RPC exchange, as seed 000's example makes it: worker 0 calls add on worker 1
  // (1000 -> 1100) and gets the answer (1200 -> 1300); in context 7 the gradients go to
  // worker 1 and back (2000 -> 2100, 2200 -> 2300, with the answers); an RRef fetch; and a
  // call still on its way (sent at 3000, never received).
  static std::vector<testing::TestMessage> seedMessages() {
    return {{0, 1, 1000, 1100, 1, -1, 1, "add", 210},
            {1, 0, 1200, 1300, 1, -1, 2, "add", 132},
            {0, 1, 2000, 2100, 2, 7, 1, "_ddpscope.dist_backward", 204},
            {1, 0, 2200, 2300, (int64_t{1} << 48) | 2, 7, 1, "_ddpscope.dist_backward", 264},
            {0, 1, 2350, 2400, (int64_t{1} << 48) | 2, 7, 2, "_ddpscope.dist_backward", 96},
            {1, 0, 2450, 2500, 2, 7, 2, "_ddpscope.dist_backward", 105},
            {0, 1, 2600, 2650, 3, -1, 5, "rref_fetch", 60},
            {0, 1, 2700, 2750, 4, 7, 1, "_ddpscope.release_context", 130},
            {1, 0, 2800, 2900, 9, -1, 3, "boom", 80},
            {0, 1, 3000, -1, 5, -1, 1, "sleep_ms", 120}};
  }

  void testSequencePairsEverySendWithItsReceive() {
    const std::string file = path("messages.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file);
      w.begin_run({R"({"job":"example"})", 2, "mpi", "example"});
      testing::write_messages(w, seedMessages(), 2);
      w.end_run("finished");
    }
    ddpscope::probes::RunStoreReader reader(file);
    const SequenceData d = load_sequence(reader, 2);
    const auto expected = seedMessages();
    QCOMPARE(d.arrows.size(), expected.size());
    QCOMPARE(d.workers, 2);
    for (size_t i = 0; i < expected.size(); ++i) {
      const auto& a = d.arrows[i];
      QCOMPARE(a.src, expected[i].src);
      QCOMPARE(a.dst, expected[i].dst);
      QCOMPARE(a.t_send_ns, expected[i].t_send);
      QCOMPARE(a.t_recv_ns, expected[i].t_recv);  // both ends joined, or -1 in flight
      QCOMPARE(a.bytes, expected[i].bytes);
      QCOMPARE(d.name_of(a.name), expected[i].name);
    }
    QCOMPARE(d.in_flight, int64_t{1});
    QCOMPARE(d.longest_ns, int64_t{100});
    QCOMPARE(d.begin_ns, int64_t{1000});
    QCOMPARE(d.end_ns, int64_t{3000});
    // Kinds: user call and answer, the gradient messages (their answers are responses),
    // the RRef fetch, ddpscope's own release, an error.
    const std::vector<ArrowKind> kinds = {ArrowKind::Request,  ArrowKind::Response, ArrowKind::Gradient,
                                          ArrowKind::Gradient, ArrowKind::Response, ArrowKind::Response,
                                          ArrowKind::RRef,     ArrowKind::Internal, ArrowKind::Error,
                                          ArrowKind::Request};
    for (size_t i = 0; i < kinds.size(); ++i)
      QCOMPARE(static_cast<int>(d.arrows[i].kind), static_cast<int>(kinds[i]));
    QCOMPARE(d.contexts.size(), size_t{1});
    QCOMPARE(d.contexts.at(7), (std::set<int>{0, 1}));
    const std::string text = describe_arrow(d, d.arrows[0]);
    QVERIFY2(text.find("call of 'add' from worker 0 to worker 1") != std::string::npos &&
                 text.find("210 B") != std::string::npos && text.find("0.1 us") != std::string::npos,
             text.c_str());
    QVERIFY(describe_arrow(d, d.arrows.back()).find("never received") != std::string::npos);

    // Filters: context 7 only; worker 1's; gradients only.
    SequenceFilter f;
    f.ctx_id = 7;
    QCOMPARE(std::count_if(d.arrows.begin(), d.arrows.end(), [&](const auto& a) { return f.accepts(a); }), 5);
    f = SequenceFilter{};
    f.ctx_id = -1;
    QCOMPARE(std::count_if(d.arrows.begin(), d.arrows.end(), [&](const auto& a) { return f.accepts(a); }), 5);
    f = SequenceFilter{};
    f.kinds = 1u << static_cast<int>(ArrowKind::Gradient);
    QCOMPARE(std::count_if(d.arrows.begin(), d.arrows.end(), [&](const auto& a) { return f.accepts(a); }), 2);
    f = SequenceFilter{};
    f.worker = 2;  // no such worker: nothing
    QCOMPARE(std::count_if(d.arrows.begin(), d.arrows.end(), [&](const auto& a) { return f.accepts(a); }), 0);
    // The window of [2210, 2260] holds every arrow that may cross it: those starting
    // from 2110 (the longest flight back) to 2260.
    const auto [first, last] = d.window(2210, 2260);
    QCOMPARE(d.arrows[first].t_send_ns, int64_t{2200});
    QCOMPARE(last - first, size_t{1});
  }

  // A run still being written: the call in flight is joined once its receive arrives.
  void testSequenceOfARunStillBeingWritten() {
    const std::string file = path("growing_messages.ddprun");
    ddpscope::probes::RunStoreWriter w(file);
    w.begin_run({R"({"job":"example"})", 2, "mpi", "example"});
    testing::write_messages(w, {{0, 1, 1000, -1, 1, -1, 1, "add", 210}}, 2);
    {
      ddpscope::probes::RunStoreReader reader(file);
      const SequenceData d = load_sequence(reader, 2);
      QCOMPARE(d.arrows.size(), size_t{1});
      QCOMPARE(d.in_flight, int64_t{1});
    }
    testing::write_messages(w, {{0, 1, -1, 1100, 1, -1, 1, "add", 210}, {1, 0, 1200, 1300, 1, -1, 2, "add", 132}}, 2);
    ddpscope::probes::RunStoreReader reader(file);
    const SequenceData d = load_sequence(reader, 2);
    QCOMPARE(d.arrows.size(), size_t{2});
    QCOMPARE(d.in_flight, int64_t{0});
    QCOMPARE(d.arrows[0].t_recv_ns, int64_t{1100});
  }

  void testDistributedGraphJoinsWorkersBySendRecvPairs() {
    const std::string file = path("seed_graphs.ddprun");
    testing::write_seed_graphs(file);
    ddpscope::probes::RunStoreReader reader(file);
    const auto choices = list_dist_graphs(reader);
    QCOMPARE(choices.size(), size_t{1});
    QCOMPARE(choices[0].ranks, (std::vector<int>{0, 1}));
    QCOMPARE(describe_choice(choices[0]), std::string("context 0:1 · pass 0:1 · workers 0, 1"));
    const GraphData g = load_dist_graph(reader, 1, 1);
    QVERIFY(g.distributed);
    QCOMPARE(g.nodes.size(), size_t{11});
    QCOMPARE(g.edges.size(), size_t{6 + 3 + 2});  // each worker's, and the two messages back
    auto find = [&](int rank, const std::string& op) {
      for (const auto& n : g.nodes)
        if (n.rank == rank && n.op == op) return n.id;
      return int64_t{-1};
    };
    auto has_edge = [&](int64_t a, int64_t b) {
      return std::any_of(g.edges.begin(), g.edges.end(), [&](const GraphEdge& e) { return e.src == a && e.dst == b; });
    };
    // t3's gradient: worker 0's recv -> worker 1's send; t1's and t2's: worker 1's recv ->
    // worker 0's send.
    QVERIFY(has_edge(find(0, "RecvRpcBackward"), find(1, "SendRpcBackward")));
    QVERIFY(has_edge(find(1, "RecvRpcBackward"), find(0, "SendRpcBackward")));
    const auto& add = g.nodes[static_cast<size_t>(find(1, "AddBackward"))];
    QCOMPARE(add.exec_ms, 0.002);
    QCOMPARE(g.nodes[static_cast<size_t>(find(1, "RecvRpcBackward"))].deps, int64_t{2});
    // Collapsed: modules per worker, the four send/recv joints kept with their messages.
    const GraphData c = collapse_by_module(g);
    QCOMPARE(std::count_if(c.nodes.begin(), c.nodes.end(),
                           [](const GraphNode& n) { return n.kind == "send" || n.kind == "recv"; }),
             4);
    for (const auto& n : c.nodes)
      QVERIFY2(n.rank == 0 || n.rank == 1, n.op.c_str());
    // Laid out as one cluster per worker, each holding its nodes.
    const GraphLayout layout = layout_graph(g);
    QVERIFY2(layout.error.empty(), layout.error.c_str());
    QCOMPARE(layout.clusters.size(), size_t{2});
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ClusterBox& box = layout.clusters[static_cast<size_t>(g.nodes[i].rank)];
      const NodeBox& n = layout.nodes[i];
      QVERIFY(n.x >= box.x && n.x <= box.x + box.w && n.y >= box.y && n.y <= box.y + box.h);
    }
    QVERIFY(node_label(g.nodes[static_cast<size_t>(find(0, "SendRpcBackward"))]).find("msg 0:1 · worker 1") !=
            std::string::npos);
    QVERIFY(node_label(g.nodes[static_cast<size_t>(find(0, "RecvRpcBackward"))]).find("msg reply to 0:1 · worker 1") !=
            std::string::npos);
  }

  // Lesson 1 from its shipped recording (resources/lessons/record.sh): seed 000's example
  // in FAST mode. The steps are the run's events; the state at each step is what they imply.
  void testLessonReplaysSeedFast() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/seed-fast.ddprun");
    const Lesson l = load_lesson(reader, 1);
    QCOMPARE(l.graph.nodes.size(), size_t{11});
    QVERIFY(l.steps.size() > 20);
    QCOMPARE(static_cast<int>(l.steps.front().kind), static_cast<int>(StepKind::ContextCreated));
    QCOMPARE(static_cast<int>(l.steps.back().kind), static_cast<int>(StepKind::ContextReleased));
    auto node = [&](int rank, const std::string& op) {
      for (size_t i = 0; i < l.graph.nodes.size(); ++i)
        if (l.graph.nodes[i].rank == rank && l.graph.nodes[i].op == op) return static_cast<int>(i);
      return -1;
    };
    // Before any step: the counts the pass starts from, nothing run, nothing on the way.
    const LessonState start = l.state_after(0);
    for (size_t i = 0; i < l.graph.nodes.size(); ++i)
      QCOMPARE(start.counters[i], l.graph.nodes[i].deps);
    QVERIFY(std::none_of(start.executed.begin(), start.executed.end(), [](bool e) { return e; }));
    QVERIFY(start.in_flight.empty());
    // Each node's count falls one gradient at a time, from its deps to 0.
    std::map<int, int64_t> expect;
    for (size_t i = 0; i < l.graph.nodes.size(); ++i)
      expect[static_cast<int>(i)] = l.graph.nodes[i].deps;
    size_t add_runs = 0, recv1_at_one = 0, first_gradients = 0, later_gradients = 0;
    for (size_t i = 0; i < l.steps.size(); ++i) {
      const LessonStep& st = l.steps[i];
      if (st.kind == StepKind::CountFalls) QCOMPARE(st.count_left, --expect[st.node]);
      if (st.kind == StepKind::NodeRuns && st.node == node(1, "AddBackward")) add_runs = i;
      if (st.kind == StepKind::CountFalls && st.node == node(1, "RecvRpcBackward") && st.count_left == 1)
        recv1_at_one = i;
      if (st.kind == StepKind::MessageArrived && st.wire_kind == 1 && st.name == "_ddpscope.dist_backward")
        (st.rank == 1 ? first_gradients : later_gradients) = i;
    }
    for (const auto& [n, left] : expect)
      QCOMPARE(left, int64_t{0});
    // Worker 1 runs AddBackward: it is the node running, and its recv waits for two.
    QVERIFY(add_runs > 0);
    const LessonState at_add = l.state_after(add_runs + 1);
    QCOMPARE(at_add.running, node(1, "AddBackward"));
    QCOMPARE(at_add.counters[static_cast<size_t>(node(1, "RecvRpcBackward"))], int64_t{2});
    const LessonState half = l.state_after(recv1_at_one + 1);
    QCOMPARE(half.counters[static_cast<size_t>(node(1, "RecvRpcBackward"))], int64_t{1});
    QVERIFY(!half.executed[static_cast<size_t>(node(1, "RecvRpcBackward"))]);
    // Gradient messages: worker 1 hears of the pass first through them; worker 0 already runs it.
    QVERIFY(l.explain(first_gradients).find("first worker 1 hears of this pass") != std::string::npos);
    QVERIFY(l.explain(later_gradients).find("only queue") != std::string::npos);
    // In flight between its send and its arrival; the send/recv view at each step draws
    // the messages sent so far, those in flight without a receive.
    size_t sent = 0;
    for (size_t i = 0; i < l.steps.size(); ++i) {
      const SequenceData seq = lesson_sequence(l, i + 1);
      const LessonState s = l.state_after(i + 1);
      sent += l.steps[i].kind == StepKind::MessageSent;
      QCOMPARE(seq.arrows.size(), sent);
      QCOMPARE(static_cast<size_t>(seq.in_flight), s.in_flight.size());
      QCOMPARE(static_cast<size_t>(std::count_if(seq.arrows.begin(), seq.arrows.end(),
                                                 [](const SequenceArrow& a) { return a.t_recv_ns < 0; })),
               s.in_flight.size());
      if (l.steps[i].kind == StepKind::MessageSent)
        QVERIFY(std::count(s.in_flight.begin(), s.in_flight.end(), i) == 1);
    }
    // At the end: every node has run (the leaves accumulated), every count is 0, every
    // message arrived, and t1, t2 and t4's gradients are in the context.
    const LessonState end = l.state_after(l.steps.size());
    QVERIFY(std::all_of(end.executed.begin(), end.executed.end(), [](bool e) { return e; }));
    QVERIFY(std::all_of(end.counters.begin(), end.counters.end(), [](int64_t c) { return c == 0; }));
    QVERIFY(end.in_flight.empty());
    std::set<std::string> leaves;
    for (int n : end.accumulated)
      leaves.insert(l.graph.nodes[static_cast<size_t>(n)].op);
    QCOMPARE(leaves, (std::set<std::string>{"AccumulateGrad(t1)", "AccumulateGrad(t2)", "AccumulateGrad(t4)"}));
    for (size_t i = 0; i < l.steps.size(); ++i)
      QVERIFY2(!l.explain(i).empty(), qPrintable(QString::number(i)));
  }

  // Lesson 2a, FAST: the pass fails, and the lesson ends on the error naming the send
  // function that never got a gradient.
  void testLessonFastEndsOnItsError() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/unused-fast.ddprun");
    const auto graphs = list_dist_graphs(reader);
    QVERIFY(!graphs.empty());
    const Lesson l = load_lesson(reader, graphs.front().ctx_id);
    QCOMPARE(static_cast<int>(l.steps.back().kind), static_cast<int>(StepKind::Verdict));
    const std::string text = l.explain(l.steps.size() - 1);
    QVERIFY2(text.find("never received gradients") != std::string::npos && text.find("SendRpcBackward") != std::string::npos,
             text.c_str());
  }

  // Lesson 2, SMART: each worker asks for the send functions its search reached, exactly
  // those become active, and the pass completes with every recorded node run.
  void testLessonShowsSmartExchange() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/unused-smart.ddprun");
    const auto graphs = list_dist_graphs(reader);
    QVERIFY(!graphs.empty());
    const Lesson l = load_lesson(reader, graphs.front().ctx_id);
    std::multiset<std::pair<int, int64_t>> asked, active;  // (send's worker, autograd id)
    for (const auto& st : l.steps) {
      if (st.kind == StepKind::SmartAsk) asked.insert({st.peer, st.msg_id});
      if (st.kind == StepKind::SmartActive) active.insert({st.rank, st.msg_id});
    }
    QVERIFY(!asked.empty());
    QCOMPARE(active, asked);
    const LessonState end = l.state_after(l.steps.size());
    QVERIFY(std::all_of(end.executed.begin(), end.executed.end(), [](bool e) { return e; }));
    QCOMPARE(static_cast<size_t>(std::count(end.active.begin(), end.active.end(), true)), active.size());
    const auto ask = std::find_if(l.steps.begin(), l.steps.end(), [](const LessonStep& s) { return s.kind == StepKind::SmartAsk; });
    QVERIFY(l.explain(static_cast<size_t>(ask - l.steps.begin())).rfind("SMART: ", 0) == 0);
  }

  // Lesson 3 from its shipped recording: rank 0's first two DDP iterations.
  void testDdpLessonShowsBucketsFillingAndReducing() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/ddp-buckets.ddprun");
    const Lesson l = load_ddp_lesson(reader, 0);
    QVERIFY(l.ddp);
    QCOMPARE(l.layout.param_names.size(), size_t{8});  // 4 Linear layers
    QVERIFY(l.layout.generations.size() == 2);         // assigned, then rebuilt
    const size_t buckets = l.layout.generations[0].size();
    QVERIFY(buckets >= 3);
    for (int iteration = 1; iteration <= 2; ++iteration) {
      std::vector<int> ready_order;
      std::vector<std::pair<int64_t, int>> launches;  // (time, bucket)
      size_t start = 0;
      for (size_t i = 0; i < l.steps.size(); ++i) {
        const LessonStep& st = l.steps[i];
        if (st.iteration != iteration) continue;
        if (st.kind == StepKind::IterationStarts) start = i;
        if (st.kind == StepKind::GradReady) ready_order.push_back(st.param);
        if (st.kind == StepKind::AllreduceStarts) launches.push_back({st.t_ns, st.bucket});
        if (st.kind == StepKind::BucketReady) {
          // Full at its ready step: every gradient of the bucket arrived.
          const LessonState s = l.state_after(i + 1);
          const BucketFill& b = s.buckets[static_cast<size_t>(st.bucket)];
          QCOMPARE(b.params_ready, b.params_total);
          QCOMPARE(b.bytes_ready, b.bytes_total);
        }
      }
      // Gradients arrive in reverse order of the parameters.
      QCOMPARE(ready_order, (std::vector<int>{7, 6, 5, 4, 3, 2, 1, 0}));
      // Allreduces launch in bucket index order, one per bucket.
      QCOMPARE(launches.size(), buckets);
      for (size_t b = 0; b < launches.size(); ++b)
        QCOMPARE(launches[b].second, static_cast<int>(b));
      // The iteration starts with empty buckets of its generation.
      const LessonState at_start = l.state_after(start + 1);
      QCOMPARE(at_start.generation, iteration - 1);
      for (const BucketFill& b : at_start.buckets) {
        QCOMPARE(b.params_ready, 0);
        QCOMPARE(static_cast<int>(b.phase), static_cast<int>(BucketFill::Phase::Filling));
      }
    }
    // At the end every bucket of iteration 2 is reduced and every node has run.
    const LessonState end = l.state_after(l.steps.size());
    for (const BucketFill& b : end.buckets)
      QCOMPARE(static_cast<int>(b.phase), static_cast<int>(BucketFill::Phase::Reduced));
    QVERIFY(std::all_of(end.executed.begin(), end.executed.end(), [](bool e) { return e; }));
    QVERIFY(std::all_of(end.counters.begin(), end.counters.end(), [](int64_t c) { return c == 0; }));
    QVERIFY(l.explain(0).find("reverse order of registration") != std::string::npos);
    for (size_t i = 0; i < l.steps.size(); ++i)
      QVERIFY2(!l.explain(i).empty(), qPrintable(QString::number(i)));
  }

  // Lesson 4: rank 1 of a job whose rank 1 skips a layer without find_unused_parameters.
  // Its bucket 1 never fills, bucket 2 fills but waits behind it, and the lesson ends on
  // the run's failure and the hang view's verdict.
  void testDdpLessonEndsOnTheHangVerdict() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/ddp-unused.ddprun");
    const Lesson l = load_ddp_lesson(reader, 1);
    QVERIFY(!l.steps.empty());
    QCOMPARE(static_cast<int>(l.steps.back().kind), static_cast<int>(StepKind::Verdict));
    const std::string verdict = l.explain(l.steps.size() - 1);
    QVERIFY2(verdict.find("No gradient ever reached {layers.2.weight, layers.2.bias} on rank 1") != std::string::npos,
             verdict.c_str());
    QVERIFY2(verdict.find("--find-unused-parameters") != std::string::npos, verdict.c_str());
    QVERIFY2(verdict.find("rank 0 waits in allreduce") != std::string::npos, verdict.c_str());
    const LessonState end = l.state_after(l.steps.size());
    QCOMPARE(end.buckets.size(), size_t{3});
    QCOMPARE(end.buckets[1].params_ready, 0);
    QCOMPARE(end.buckets[2].params_ready, end.buckets[2].params_total);
    QCOMPARE(static_cast<int>(end.buckets[2].phase), static_cast<int>(BucketFill::Phase::Filling));  // never launched
  }

  // Extra arguments split as a shell would split words, with nothing run.
  void testExtraArgumentsSplitLikeShellWords() {
    QString error;
    QCOMPARE(splitArguments(QStringLiteral("--lr 0.01  --save 'my model.bin'"), &error),
             (QStringList{"--lr", "0.01", "--save", "my model.bin"}));
    QCOMPARE(splitArguments(QStringLiteral("--save \"a \\\"b\\\" $(c)\" x\\ y ''"), &error),
             (QStringList{"--save", "a \"b\" $(c)", "x y", ""}));
    QCOMPARE(splitArguments(QStringLiteral("a;b `c` $(d)"), &error), (QStringList{"a;b", "`c`", "$(d)"}));
    QVERIFY(error.isEmpty());
    splitArguments(QStringLiteral("--save 'open"), &error);
    QCOMPARE(error, QStringLiteral("a ' quote is not closed"));
    LaunchConfig c;
    c.extraArguments = QStringLiteral("--lr \"0.1");
    QCOMPARE(validate(c).value(QStringLiteral("extra_arguments")), QStringLiteral("a \" quote is not closed"));
  }

  // The summary's line about what was refused at the run's doors.
  void testRejectedMessagesAreDescribed() {
    QCOMPARE(describe_rejected({{"collector_batches", 0}, {"rpc_without_token", 0}, {"rpc_malformed", 0},
                                {"by_rank", nlohmann::ordered_json::array()}}),
             std::string());
    const nlohmann::ordered_json r = {
        {"collector_batches", 2},
        {"rpc_without_token", 15},
        {"rpc_malformed", 1},
        {"by_rank", {{{"rank", 1}, {"rpc_without_token", 15}, {"rpc_malformed", 0}},
                     {{"rank", 2}, {"rpc_without_token", 0}, {"rpc_malformed", 1}}}}};
    QCOMPARE(describe_rejected(r), std::string("Refused from outside the job: 2 batches at the collector; 15 RPC "
                                               "messages without the job's token and 1 malformed (rank 1: 15, "
                                               "rank 2: 1)."));
  }
};

QTEST_GUILESS_MAIN(TestGuiModels)
#include "tst_gui_models.moc"
