// SpanDetails and search: what Details says of a span, against the run file.
#include <QtTest/QtTest>
#include <QAbstractItemModelTester>
#include <map>
#include "gui_test_runs.h"
#include "overlap_model.h"
#include "run_data.h"
#include "sequence_data.h"
#include "range_summary.h"
#include "ruler_ticks.h"
#include "collective_bandwidth.h"
#include "span_details.h"
#include "span_table.h"
#include "time_axis.h"
#include "time_format.h"
#include "timeline_search.h"
#include "track_layout.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestSpanDetails : public ScratchTest {
  Q_OBJECT

 private slots:
  // The details of a selected span equal its row in the run file; search finds names,
  // buckets and parameters.
  void testSpanDetailsMatchTheRunFileAndSearch() {
    const std::string file = path("details.ddprun");
    testing::write_test_run(file, 2, 3);
    const RunData run = loadRun(file);
    const TimelineData& t = run.timeline;
    ddpscope::probes::SqliteDb db(file, SQLITE_OPEN_READONLY);
    ddpscope::probes::register_span_table(db.handle());  // SQL over the packs
    int checked = 0;
    for (size_t l = 0; l < t.lanes.size(); ++l) {
      for (int64_t k = 0; k < static_cast<int64_t>(t.lanes[l].spans.size()); ++k) {
        const SpanDetails d = spanDetails(t, {static_cast<int>(l), k, SpanRef::In::Spans});
        auto q = db.prepare(
            "SELECT s.rank, th.name, s.kind, n.name, s.t_begin_ns, s.t_end_ns, IFNULL(s.iteration, -1), "
            "IFNULL(s.bucket, -1), IFNULL(s.bytes, -1), IFNULL(s.seq, -1), IFNULL(s.param, -1) FROM spans s "
            "JOIN names n ON n.name_id = s.name_id JOIN threads th ON th.rank = s.rank AND th.thread = s.thread "
            "WHERE s.rowid = ?1");
        q.bind(1, d.rowid);
        QVERIFY(q.step());
        QCOMPARE(d.rank, static_cast<int>(q.column_int64(0)));
        QCOMPARE(d.thread, q.column_text(1));
        QCOMPARE(d.kind,
                 std::string(ddpscope::probes::kind_name(static_cast<ddpscope::probes::Kind>(q.column_int64(2)))));
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
      if (t.nameOf(compute.spans[k].name) == "finalize" && compute.spans[k].iteration == 2)
        finalize = static_cast<int64_t>(k);
    const SpanDetails f = spanDetails(t, {0, finalize, SpanRef::In::Spans});
    QCOMPARE(t.nameOf(t.resolve(f.parent)->name), std::string("backward"));
    const SpanDetails it = spanDetails(t, spanDetails(t, f.parent).parent);
    QCOMPARE(it.kind, std::string("iteration"));
    QCOMPARE(it.children.size(), size_t(3));
    // A bucket allreduce: the same sequence number on the other rank.
    const SpanDetails ar = spanDetails(t, {1, 2, SpanRef::In::Spans});
    QCOMPARE(ar.kind, std::string("allreduce"));
    QCOMPARE(ar.same_collective.size(), size_t(1));
    const TimelineSpan* other = t.resolve(ar.same_collective[0]);
    QCOMPARE(other->seq, ar.seq);
    QCOMPARE(t.lanes[static_cast<size_t>(ar.same_collective[0].lane)].rank, 1);
    // Search: names, any case; buckets; parameters (bucket-ready marks carry no param
    // here, so the parameter "w" finds nothing but does not fail).
    const SearchResults byName = searchTimeline(t, "FINAL");
    QCOMPARE(byName.matches.size(), size_t(6));
    for (size_t i = 1; i < byName.matches.size(); ++i)
      QVERIFY(t.resolve(byName.matches[i - 1])->begin_ns <= t.resolve(byName.matches[i])->begin_ns);
    const SearchResults byBucket = searchTimeline(t, "bucket 1");
    QCOMPARE(byBucket.matches.size(), size_t(2 * 3 * 2));  // allreduces and ready marks
    for (const SpanRef& r : byBucket.matches)
      QCOMPARE(t.resolve(r)->bucket, 1);
    QCOMPARE(searchTimeline(t, "nothing like it").matches.size(), size_t(0));
    QCOMPARE(searchTimeline(t, "  ").matches.size(), size_t(0));
  }

  // A bucket allreduce's transfer: from the later of the two ranks' starts to its own end;
  // its bus bandwidth from that (2 ranks: the allreduce's factor 2(n-1)/n is 1).
  void testACollectivesTransferAndBandwidth() {
    const std::string file = path("transfer.ddprun");
    testing::write_test_run(file, 2, 3);
    const RunData run = loadRun(file);
    const TimelineData& t = run.timeline;
    const SpanDetails ar = spanDetails(t, {1, 2, SpanRef::In::Spans});
    QCOMPARE(ar.same_collective.size(), size_t(1));
    const TimelineSpan* other = t.resolve(ar.same_collective[0]);
    const TimelineSpan* mine = t.resolve(ar.ref);
    const int64_t transfer = mine->end_ns - std::max(mine->begin_ns, other->begin_ns);
    QCOMPARE(ar.transfer_ns, transfer);
    QCOMPARE(ar.group_ranks, 2);
    const auto field = [&](const std::string& label) {
      for (const auto& [l, v] : ar.fields())
        if (l == label) return v;
      return std::string();
    };
    QCOMPARE(field("Bandwidth"),
             ddpscope::probes::rate_text(static_cast<double>(ar.bytes) / static_cast<double>(transfer)) + " bus, " +
                 ddpscope::probes::rate_text(static_cast<double>(ar.bytes) / static_cast<double>(transfer)) +
                 " algorithm");
    QVERIFY2(field("Transfer").find("after the last of 2 ranks arrived") != std::string::npos,
             field("Transfer").c_str());
    // With the links measured, read against their ceiling: here twice the bus bandwidth.
    TimelineData measured = t;
    const double bus = static_cast<double>(ar.bytes) / static_cast<double>(transfer);
    measured.link_ceiling_gbps = 2 * bus;
    const SpanDetails against = spanDetails(measured, {1, 2, SpanRef::In::Spans});
    std::string bandwidth;
    for (const auto& [l, v] : against.fields())
      if (l == "Bandwidth") bandwidth = v;
    QVERIFY2(bandwidth.ends_with(" algorithm (50% of the links' measured ceiling, " +
                                 ddpscope::probes::link_rate_text(2 * bus) + ")"),
             bandwidth.c_str());
  }
};

DDPSCOPE_TEST_MAIN(TestSpanDetails)
#include "tst_span_details.moc"
