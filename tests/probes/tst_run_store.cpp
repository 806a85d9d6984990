// The run store: the schema and its version, WAL mode, readers while the writer goes
// on, every record type read back, the overlap analysis on a run with known times, the
// Chrome trace export, and clear errors for files that are damaged, foreign or newer.
#include <QtTest/QtTest>

#include "ddpscope/bucket_rule.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QDir>
#include <QTemporaryDir>
#include <functional>
#include <cmath>
#include <nlohmann/json.hpp>

#include "bucket_advice.h"
#include "chrome_trace_export.h"
#include "hang_analysis.h"
#include "overlap_analysis.h"
#include "run_stats.h"
#include "run_store_reader.h"
#include "sqlite_db.h"
#include "run_store_schema.h"
#include "run_store_writer.h"
#include "scratch_test.h"

using namespace ddpscope;
using namespace ddpscope::probes;

namespace {

BatchEvent event(Kind kind, uint32_t name, int64_t b, int64_t e, int32_t iteration, int16_t bucket = -1,
                 int64_t bytes = -1, uint16_t thread = 0) {
  return BatchEvent{b, e, bytes, -1, -1, iteration, -1, name, bucket, -1, thread, static_cast<uint8_t>(kind), 0};
}

// One rank, one iteration with known times (ns):
//   iteration [0, 1000]; forward [0, 200]; backward [200, 800]; finalize [700, 800]
//   bucket 0 allreduce [300, 500] (hidden); bucket 1 allreduce [650, 760] (exposed 50..60)
//   optimizer [800, 900]; bucket 1 ready at 640.
EventBatch known_iteration(int rank, int64_t offset_ns = 0) {
  EventBatch b;
  b.rank = rank;
  b.clock_offset_ns = offset_ns;
  b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
  b.names = {"iteration", "forward", "backward", "finalize", "allreduce", "optimizer", "bucket_ready"};
  b.events = {event(Kind::Iteration, 0, 0, 1000, 1),
              event(Kind::Forward, 1, 0, 200, 1),
              event(Kind::Backward, 2, 200, 800, 1),
              event(Kind::Finalize, 3, 700, 800, 1),
              event(Kind::Allreduce, 4, 300, 500, 1, 0, 4096, 1),
              event(Kind::Allreduce, 4, 650, 760, 1, 1, 8192, 1),
              event(Kind::BucketReady, 6, 640, 640, 1, 1),
              event(Kind::Optimizer, 5, 800, 900, 1)};
  b.records = {R"j({"type":"metric","iteration":1,"name":"loss","value":0.5})j",
               R"j({"type":"buckets","generation":0,"buckets":[{"bucket":0,"bytes":4096,"params":[1,0]}],)j"
               R"j("params":[{"index":0,"name":"w","shape":[32,32],"dtype":"f32","bucket":0,"offset":0},)j"
               R"j({"index":1,"name":"b","shape":[32],"dtype":"f32","bucket":0,"offset":1024}]})j",
               R"j({"type":"graph","ctx_id":-1,"iteration":1,"nodes":[[0,"MseLossBackward","operation",0,5],)j"
               R"j([1,"AccumulateGrad(w)","accumulate_grad",1,0]],"edges":[[0,1,0]]})j"};
  return b;
}

// A 2-rank run written to `file` that failed with `message` reported by rank 0: each rank
// has iteration 1 (0-1000 ns) on its compute thread, then `ops(rank)` on its comm thread.
HangReport hang_of_failed_run(const std::string& file, const std::function<std::vector<BatchEvent>(int)>& ops,
                              const std::string& message) {
  {
    RunStoreWriter w(file);
    w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
    for (int rank = 0; rank < 2; ++rank) {
      EventBatch b;
      b.rank = rank;
      b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
      b.names = {"iteration", "allreduce"};
      b.events.push_back(BatchEvent{0, 1000, -1, -1, -1, 1, -1, 0, -1, -1, 0, uint8_t(Kind::Iteration), 0});
      for (const BatchEvent& e : ops(rank))
        b.events.push_back(e);
      w.write(b);
    }
    w.end_run("failed", message, 0);
  }
  RunStoreReader run(file);
  return analyze_hang(run);
}

// Allreduce #seq on the comm thread: started (no end yet), or done.
BatchEvent allreduce_started(int64_t seq, int64_t bytes, int64_t t) {
  return BatchEvent{t, t, bytes, seq, -1, 2, -1, 1, -1, -1, 1, uint8_t(Kind::PgOpStart), 0};
}
BatchEvent allreduce_done(int64_t seq, int64_t t) {
  return BatchEvent{t, t + 100, 8, seq, -1, 1, -1, 1, -1, -1, 1, uint8_t(Kind::PgOp), 0};
}

}  // namespace

class TestRunStore : public ScratchTest {
  Q_OBJECT

 private slots:
  // WAL while the run is written (readers follow it), one self-contained file after.
  void testSchemaVersionAndWal() {
    const std::string file = path("schema.ddprun");
    const auto journal_mode = [&] {
      SqliteDb db(file, SQLITE_OPEN_READONLY);
      Statement mode = db.prepare("PRAGMA journal_mode");
      return mode.step() ? mode.column_text(0) : std::string();
    };
    {
      RunStoreWriter w(file);
      QCOMPARE(journal_mode(), std::string("wal"));
      QVERIFY(QFile::exists(QString::fromStdString(file + "-wal")));
    }
    QCOMPARE(journal_mode(), std::string("delete"));
    QVERIFY(!QFile::exists(QString::fromStdString(file + "-wal")));
    QVERIFY(!QFile::exists(QString::fromStdString(file + "-shm")));
    SqliteDb db(file, SQLITE_OPEN_READONLY);
    QCOMPARE(schema_version(db), kRunStoreSchemaVersion);
    QCOMPARE(db.query_int64("SELECT count(*) FROM kinds"), int64_t(kNumKinds));
    // The packs' index the views' queries go through (by rank, time and kind).
    QCOMPARE(db.query_int64("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                            "'span_packs_by_rank_time'"),
             int64_t(1));
    QCOMPARE(db.query_int64("PRAGMA page_size"), int64_t(16384));
  }

  // Reading a run writes nothing beside it, a run left in WAL mode (an older build's, or
  // one a reader held open at the end) included: no -wal, no -shm, folder unchanged.
  void testReadersWriteNothing() {
    QTemporaryDir folder;
    const std::string file = folder.filePath("old.ddprun").toStdString();
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 1, "none", "mlp"});
      w.write(known_iteration(0));
      w.end_run("finished");
    }
    {
      SqliteDb db(file, SQLITE_OPEN_READWRITE);
      db.exec("PRAGMA journal_mode=WAL");  // as an older build left its runs
    }
    const QStringList before = QDir(folder.path()).entryList(QDir::Files | QDir::Hidden);
    QCOMPARE(before, QStringList{"old.ddprun"});
    {
      RunStoreReader reader(file);
      QCOMPARE(reader.run().status, std::string("finished"));
      QCOMPARE(reader.span_count(), int64_t{8});
      QCOMPARE(QDir(folder.path()).entryList(QDir::Files | QDir::Hidden), before);  // while open
    }
    QCOMPARE(QDir(folder.path()).entryList(QDir::Files | QDir::Hidden), before);
  }

  void testEveryRecordReadsBack() {
    const std::string file = path("records.ddprun");
    RunStoreWriter w(file);
    w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
    w.write(known_iteration(0));
    w.end_run("failed", "rank 1 died", 1);
    RunStoreReader r(file);
    const RunRow run = r.run();
    QCOMPARE(run.status, std::string("failed"));
    QCOMPARE(run.failed_rank, 1);
    QCOMPARE(run.message, std::string("rank 1 died"));
    QCOMPARE(run.world_size, 2);
    QCOMPARE(run.model, std::string("mlp"));
    const auto buckets = r.buckets(0);
    QCOMPARE(buckets.size(), size_t(1));
    QCOMPARE(buckets[0].bytes, int64_t(4096));
    QCOMPARE(buckets[0].params, (std::vector<int64_t>{1, 0}));
    const auto params = r.params(0, 0);
    QCOMPARE(params.size(), size_t(2));
    QCOMPARE(params[0].name, std::string("w"));
    QCOMPARE(params[0].numel, int64_t(1024));
    QCOMPARE(params[1].offset, int64_t(1024));
    const GraphRows g = r.graph(0);
    QCOMPARE(g.iteration, int64_t(1));
    QCOMPARE(g.nodes.size(), size_t(2));
    QCOMPARE(g.nodes[1].op, std::string("AccumulateGrad(w)"));
    QCOMPARE(g.nodes[1].deps, int64_t(1));
    QCOMPARE(g.edges.size(), size_t(1));
    const auto loss = r.metrics("loss");
    QCOMPARE(loss.size(), size_t(1));
    QCOMPARE(loss[0].value, 0.5);
    QCOMPARE(r.threads().size(), size_t(2));
    QCOMPARE(r.integrity_check(), std::string("ok"));
  }

  void testQueriesByWindowKindRankAndIteration() {
    const std::string file = path("query.ddprun");
    RunStoreWriter w(file);
    w.begin_run({});
    w.write(known_iteration(0));
    w.write(known_iteration(1, 5000));  // rank 1's times land 5000 ns later
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t(16));
    QCOMPARE(r.spans({.kinds = {Kind::Allreduce}}).size(), size_t(4));
    QCOMPARE(r.spans({.kinds = {Kind::Allreduce}, .rank = 1}).size(), size_t(2));
    // Spans overlapping [600, 700] on rank 0: iteration, backward, finalize, allreduce 1,
    // and the ready instant at 640.
    QCOMPARE(r.spans({.t_begin_ns = 600, .t_end_ns = 700, .rank = 0}).size(), size_t(5));
    const auto shifted = r.spans({.kinds = {Kind::Iteration}, .rank = 1});
    QCOMPARE(shifted.at(0).t_begin_ns, int64_t(5000));
    QCOMPARE(r.time_range(), (std::pair<int64_t, int64_t>{0, 6000}));
    QCOMPARE(r.spans({.iteration = 2}).size(), size_t(0));
    QCOMPARE(r.spans({.limit = 3}).size(), size_t(3));
  }

  void testIntervalArithmetic() {
    const auto m = merge_intervals({{5, 10}, {0, 3}, {2, 4}, {10, 12}, {20, 20}});
    QCOMPARE(m.size(), size_t(2));
    QCOMPARE(m[0].begin, int64_t(0));
    QCOMPARE(m[0].end, int64_t(4));
    QCOMPARE(m[1].end, int64_t(12));
    QCOMPARE(total_length(m), int64_t(11));
    const auto d = subtract_intervals({{0, 10}, {20, 30}}, {{2, 4}, {8, 22}, {25, 26}});
    QCOMPARE(total_length(d), int64_t(2 + 4 + 3 + 4));  // [0,2] [4,8] [22,25] [26,30]
    QCOMPARE(d.size(), size_t(4));
  }

  void testOverlapAnalysisOfKnownIteration() {
    const std::string file = path("overlap.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      w.write(known_iteration(0));
    }
    RunStoreReader r(file);
    const RunAnalysis a = analyze_run(r);
    QCOMPARE(a.iterations.size(), size_t(1));
    const IterationAnalysis& it = a.iterations[0];
    QCOMPARE(it.iteration_ms, 1000e-6);
    QCOMPARE(it.forward_ms, 200e-6);
    QCOMPARE(it.backward_ms, 500e-6);     // 600 minus the 100 of finalize
    QCOMPARE(it.comm_ms, 310e-6);         // 200 + 110
    QCOMPARE(it.exposed_comm_ms, 60e-6);  // bucket 1 from 700 to 760
    QCOMPARE(it.exposed.size(), size_t(1));
    QCOMPARE(it.exposed[0].begin, int64_t(700));
    QCOMPARE(it.exposed[0].end, int64_t(760));
    QVERIFY(std::fabs(it.overlap_ratio - (1 - 60.0 / 310.0)) < 1e-12);
    QCOMPARE(a.buckets.size(), size_t(2));
    QCOMPARE(a.buckets[1].bucket, 1);
    QCOMPARE(a.buckets[1].ready_ns, int64_t(640));
    QCOMPARE(a.buckets[1].bytes, int64_t(8192));
    QCOMPARE(a.buckets[1].wait_ms, 60e-6);
    QCOMPARE(a.buckets[0].wait_ms, 0.0);
    const nlohmann::json stats = nlohmann::json::parse(run_stats_json(r).dump());
    QCOMPARE(stats["iterations"].size(), size_t(1));
    QCOMPARE(stats["iterations"][0]["exposed_comm_ms"].get<double>(), 60e-6);
    QCOMPARE(stats["buckets"].size(), size_t(2));
  }

  void testReadableWhileTheWriterGoesOn() {
    const std::string file = path("live.ddprun");
    RunStoreWriter w(file);
    w.begin_run({});
    w.write(known_iteration(0));
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t(8));
    QCOMPARE(r.run().status, std::string("running"));
    w.write(known_iteration(1));
    QCOMPARE(r.span_count(), int64_t(16));
    w.end_run("finished");
    QCOMPARE(r.run().status, std::string("finished"));
  }

  // Bucket advice packs gradients as the reducer does: a bucket closes once it holds at
  // least its cap (the first at the first-bucket cap); the rest goes in a last bucket.
  // The cost read off a measured sweep is linear between sizes, times the training
  // factor.
  void testBucketAdvicePackingAndCost() {
    using ddpscope::pack_buckets;
    QCOMPARE(pack_buckets({4, 4, 4, 4, 4}, {4, 8}), (std::vector<size_t>{0, 2, 4}));
    QCOMPARE(pack_buckets({10, 1, 1, 1}, {4, 100}), (std::vector<size_t>{0, 3}));
    QCOMPARE(pack_buckets({1, 1, 1}, {100, 100}), (std::vector<size_t>{2}));
    QCOMPARE(pack_buckets({}, {1, 1}), (std::vector<size_t>{}));
    ddpscope::probes::AllreduceCost cost;
    cost.measured = {{1000, 1e5}, {5000, 5e5}};
    cost.ns_per_byte = 100;
    cost.training_factor = 1.5;
    QCOMPARE(cost.cost_ns(3000), 3e5 * 1.5);
    QCOMPARE(cost.cost_ns(7000), 7e5 * 1.5);  // beyond the largest: at ns_per_byte
    cost.measured.clear();
    cost.fixed_ns = 50;
    QCOMPARE(cost.cost_ns(10), 50 + 1000.0);  // no sweep: affine
  }

  // The verdict when every rank entered the collective and one timed out: the ranks that
  // never timed out themselves (stopped, or stuck inside the transfer) are the culprits,
  // not the rank that reported it. Both ranks start allreduce #5; neither finishes it.
  void testHangVerdictWhenEveryRankEntered() {
    const HangReport report = hang_of_failed_run(
        path("entered.ddprun"), [](int) { return std::vector<BatchEvent>{allreduce_started(5, 4096, 1100)}; },
        "timeout: rank 0 waited 4000 ms in allreduce #5. MPI cannot cancel it");
    QVERIFY2(QString::fromStdString(report.verdict)
                 .startsWith("Every rank entered allreduce #5, and rank 0 waited in it until its timeout. Rank 1 "
                             "never timed out itself"),
             report.verdict.c_str());
    QCOMPARE(report.culprits, std::vector<int>{1});
    QVERIFY(report.verdict.find("Rank 0 reported it: timeout") != std::string::npos);
  }

  // A torch rank whose gloo timeout ended its wait in #5 (its last event the failure's
  // mark) and then aborted (signal 6) died of that wait: the rank it waited for, stopped
  // inside #5, is the culprit, not the rank that died (the fault suite met "Rank 0 died by
  // signal 6 ... rank(s) 1 were waiting in a collective").
  void testHangVerdictWhenTheRankThatTimedOutThenAborted() {
    const std::string file = path("aborted-after-timeout.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"torch"})", 2, "gloo", "torch"});
      for (int rank = 0; rank < 2; ++rank) {
        EventBatch b;
        b.rank = rank;
        b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
        b.names = {"iteration", "allreduce", "allreduce #5 failed: Application timeout caused pair closure"};
        b.events.push_back(BatchEvent{0, 1000, -1, -1, -1, 1, -1, 0, -1, -1, 0, uint8_t(Kind::Iteration), 0});
        b.events.push_back(allreduce_started(5, 4096, 1100));
        if (rank == 0)
          b.events.push_back(BatchEvent{5200, 5200, -1, -1, -1, 2, -1, 2, -1, -1, 1, uint8_t(Kind::Mark), 0});
        w.write(b);
      }
      w.end_run("failed", "rank 0: RuntimeError: Application timeout caused pair closure", 0);
    }
    {
      SqliteDb db(file, SQLITE_OPEN_READWRITE);
      db.exec("UPDATE runs SET dead_rank = 0, dead_signal = 'signal 6 (Aborted)'");
    }
    RunStoreReader run(file);
    const HangReport report = analyze_hang(run);
    QVERIFY2(QString::fromStdString(report.verdict)
                 .startsWith("Every rank entered allreduce #5, and rank 0 waited in it until its timeout. Rank 1 "
                             "never timed out itself"),
             report.verdict.c_str());
    QVERIFY2(
        report.verdict.find("rank 0 then died by signal 6 (Aborted) when its wait timed out.") != std::string::npos,
        report.verdict.c_str());
    QCOMPARE(report.culprits, std::vector<int>{1});
  }

  // The reporter's own start of the op never reached the file (the job ended first): its
  // timeout message names the op and number, and the verdict still finds the culprit.
  void testHangVerdictFromTheTimeoutMessageAlone() {
    const HangReport report = hang_of_failed_run(
        path("message-only.ddprun"),
        [](int rank) {  // rank 1 finished #4 and never started #5
          return rank == 1 ? std::vector<BatchEvent>{allreduce_done(4, 1000)} : std::vector<BatchEvent>{};
        },
        "timeout: rank 0 waited 4000 ms in allreduce #5 f64[] (avg) on group 'world'");
    QVERIFY2(
        QString::fromStdString(report.verdict).startsWith("Rank 1 never entered allreduce #5, which rank 0 waited in"),
        report.verdict.c_str());
    QCOMPARE(report.culprits, std::vector<int>{1});
  }

  // The reporter timed out in #5 while the stopped rank had finished #5 and started #6
  // (its part of #5 sent, the transfer not through to rank 0): rank 0 is stuck in #5, not
  // absent from #6, and the rank that never timed out is the culprit. (The fault suite
  // met "Rank 0 never entered allreduce #2829, which rank 1 waited in".)
  void testHangVerdictWhenTheReporterIsStuckInAnEarlierCollective() {
    const HangReport report = hang_of_failed_run(
        path("stuck-earlier.ddprun"),
        [](int rank) {
          if (rank == 0) return std::vector<BatchEvent>{allreduce_done(4, 1000), allreduce_started(5, 8, 1100)};
          return std::vector<BatchEvent>{allreduce_done(4, 1000), allreduce_done(5, 1100),
                                         allreduce_started(6, 8, 1200)};
        },
        "timeout: rank 0 waited 4000 ms in allreduce #5 f64[] (avg) on group 'world'");
    QVERIFY2(QString::fromStdString(report.verdict)
                 .startsWith("Every rank entered allreduce #5, and rank 0 waited in it until its timeout. Rank 1 "
                             "never timed out itself"),
             report.verdict.c_str());
    QCOMPARE(report.culprits, std::vector<int>{1});
  }

  // The stopped rank's start of the op reached the file and the reporter's did not (its
  // watchdog ended the job before it shipped): the timeout message says the reporter
  // entered, so the stopped rank is the culprit, not the reporter. (The fault suite met
  // this: "Rank 0 never entered allreduce #4001, which rank 1 waited in".)
  // Both ways a rank reports a timeout: its group's watchdog, or the wait's backstop a
  // little later (which the fault suite also met).
  void testHangVerdictWhenOnlyTheStoppedRanksStartWasShipped() {
    int n = 0;
    for (const std::string message :
         {"timeout: rank 0 waited 4000 ms in allreduce #5 f64[] (avg) on group 'world'",
          "timeout: rank 0 waited 5000 ms for allreduce #5 f64[] (avg) on group 'world' to complete; a peer has not "
          "joined it"}) {
      const HangReport report = hang_of_failed_run(
          path(("stopped-shipped-" + std::to_string(++n) + ".ddprun").c_str()),
          [](int rank) {  // both finished #4; rank 1 started #5, then stopped
            std::vector<BatchEvent> ops{allreduce_done(4, 1000)};
            if (rank == 1) ops.push_back(allreduce_started(5, 8, 1200));
            return ops;
          },
          message);
      QVERIFY2(QString::fromStdString(report.verdict)
                   .startsWith("Every rank entered allreduce #5, and rank 0 waited in it until its timeout. Rank 1 "
                               "never timed out itself"),
               report.verdict.c_str());
      QCOMPARE(report.culprits, std::vector<int>{1});
    }
  }

  // A rank stopped while setting up (after it reached the collector, before DDP's first
  // collective): it has no event at all, and the verdict says so rather than describing
  // an empty "last event" at a time before the run began.
  void testHangVerdictForARankWithNoEvents() {
    const std::string file = path("setting-up.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      for (int rank = 0; rank < 2; ++rank) {
        EventBatch b;
        b.rank = rank;
        b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
        b.names = {"allgather"};
        if (rank == 0)
          b.events.push_back(BatchEvent{1100, 1100, 64, 0, -1, 1, -1, 0, -1, -1, 1, uint8_t(Kind::PgOpStart), 0});
        w.write(b);
      }
    }
    RunStoreReader run(file);
    const HangReport report = analyze_hang(run);
    QVERIFY2(QString::fromStdString(report.verdict)
                 .startsWith("Rank 1 never entered allgather #0, which rank 0 waited in; rank 1 was still setting "
                             "up: it has recorded no event"),
             report.verdict.c_str());
    QCOMPARE(report.culprits, std::vector<int>{1});
  }

  // A "settings" record (a PyTorch job's DDP options) merges into the run's config; one
  // whose values are not an object is skipped, the config left as it was. Its backend
  // (gloo) replaces the "torch" the launcher knew.
  void testSettingsRecordsMergeIntoTheConfig() {
    const std::string file = path("settings.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"source":"torch-script","np":2})", 1, "torch", "script"});
      EventBatch b = known_iteration(0);
      b.records = {R"j({"type":"settings","backend":"gloo","values":{"bucket_cap_mb":0.25,"np":4}})j",
                   R"j({"type":"settings","values":[1,2]})j",
                   R"j({"type":"settings","values":{"static_graph":true}})j"};
      w.write(b);
    }
    RunStoreReader run(file);
    const auto config = nlohmann::json::parse(run.run().config_json);
    QCOMPARE(config.value("source", ""), std::string("torch-script"));
    QCOMPARE(config.value("bucket_cap_mb", 0.0), 0.25);
    QCOMPARE(config.value("np", 0), 4);
    QCOMPARE(config.value("static_graph", false), true);
    QCOMPARE(config.size(), size_t{4});
    QCOMPARE(run.run().backend, std::string("gloo"));
  }

  // A script's run (a PyTorch job) records no iteration count: finished, its ranks are done,
  // not "between iterations"; still running, they are between iterations.
  void testFinishedRunWithoutAnIterationCountIsDone() {
    for (const bool finished : {true, false}) {
      const std::string file = path(finished ? "script-done.ddprun" : "script-running.ddprun");
      {
        RunStoreWriter w(file);
        w.begin_run({R"({"source":"torch-script"})", 1, "gloo", "script"});
        w.write(known_iteration(0));
        if (finished) w.end_run("finished", "");
      }
      RunStoreReader run(file);
      const HangReport report = analyze_hang(run);
      QCOMPARE(report.ranks.size(), size_t{1});
      QCOMPARE(QString::fromStdString(report.ranks[0].phase),
               finished ? QString("done") : QString("between iterations"));
      QCOMPARE(report.ranks[0].current_iteration, finished ? int64_t{1} : int64_t{2});
    }
  }

  // Uneven inputs without join: rank 1 left its loop after iteration 1 and waits in the
  // job's final barrier, which is its collective #5; rank 0's #5 is iteration 2's allreduce.
  void testHangVerdictNamesCollectivesThatDiffer() {
    const std::string file = path("differ.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp","iters":4})", 2, "mpi", "mlp"});
      for (int rank = 0; rank < 2; ++rank) {
        EventBatch b;
        b.rank = rank;
        b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
        b.names = {"iteration", "allreduce", "barrier"};
        b.events.push_back(BatchEvent{0, 1000, -1, -1, -1, 1, -1, 0, -1, -1, 0, uint8_t(Kind::Iteration), 0});
        if (rank == 0) {
          b.events.push_back(BatchEvent{1100, 1100, 4096, 5, -1, 2, -1, 1, -1, -1, 1, uint8_t(Kind::PgOpStart), 0});
        } else {
          b.events.push_back(BatchEvent{1100, 1100, -1, 5, -1, 1, -1, 2, -1, -1, 0, uint8_t(Kind::PgOpStart), 0});
        }
        w.write(b);
      }
      w.end_run("failed", "timeout: rank 1 waited 4000 ms in barrier #5. MPI cannot cancel it", 1);
    }
    RunStoreReader run(file);
    const HangReport report = analyze_hang(run);
    QVERIFY2(QString::fromStdString(report.verdict)
                 .startsWith("Ranks called different collectives as #5: rank 0 allreduce (4 KiB) in iteration 2, "
                             "rank 1 barrier in iteration 1. Rank 1 stopped at iteration 1 while rank 0 went on to "
                             "iteration 2"),
             report.verdict.c_str());
    QVERIFY2(report.verdict.find("--join") != std::string::npos, report.verdict.c_str());
    QCOMPARE(report.culprits, std::vector<int>{1});
  }

  void testChromeTraceExport() {
    const std::string file = path("trace.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({"{}", 2, "mpi", "mlp"});
      w.write(known_iteration(0));
      w.write(known_iteration(1, 100));
    }
    RunStoreReader r(file);
    const std::string out = path("trace.json");
    const int64_t n = export_chrome_trace(r, out);
    QFile f(QString::fromStdString(out));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
    const QJsonArray events = doc.object()["traceEvents"].toArray();
    QCOMPARE(events.size(), int(n));
    int complete = 0, instants = 0, process_names = 0, thread_names = 0;
    for (const QJsonValue& v : events) {
      const QJsonObject e = v.toObject();
      const QString ph = e["ph"].toString();
      if (ph == "X") {
        ++complete;
        QVERIFY(e["dur"].toDouble() > 0);
      }
      if (ph == "i") ++instants;
      if (e["name"] == "process_name") ++process_names;
      if (e["name"] == "thread_name") ++thread_names;
      if (e["cat"] == "allreduce" && e["pid"] == 1 && e["args"].toObject()["bucket"] == 1) {
        // Rank 1 is 100 ns behind: its bucket 1 starts at 750 ns = 0.75 us.
        QCOMPARE(e["ts"].toDouble(), 0.75);
        QCOMPARE(e["args"].toObject()["bytes"].toInt(), 8192);
      }
    }
    QCOMPARE(complete, 14);
    QCOMPARE(instants, 2);
    QCOMPARE(process_names, 2);
    QCOMPARE(thread_names, 4);
    QVERIFY(!QFile::exists(QString::fromStdString(out + ".partial")));
  }

  // One long name shared by many spans: each row would copy it (4.5 MB by 400 marks made
  // 1.9 GB), so the read is refused for what the rows would hold (issue 49).
  void testLongNamesRepeatedAreRefused() {
    const std::string file = path("long-names.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      EventBatch b;
      b.rank = 0;
      b.threads = {{0, 100, "main"}};
      b.names = {std::string(1 << 20, 'n')};
      for (int i = 0; i < 300; ++i)
        b.events.push_back(::event(Kind::Mark, 0, 10 * i, 10 * i, 1));
      w.write(b);
      w.end_run("finished");
    }
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t{300});
    try {
      r.spans({.kinds = {Kind::Mark}});
      QFAIL("300 copies of a 1 MiB name were made");
    } catch (const RunStoreError& e) {
      QVERIFY2(QString(e.what()).contains("the 300 spans read carry 300 MiB of names, more than 256 MiB"), e.what());
    }
    QCOMPARE(r.spans({.kinds = {Kind::Mark}, .limit = 10}).size(), size_t{10});  // a few are fine
  }

  void testBadFilesGetClearErrors_data() {
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not a database") << "garbage"
                                    << "not a ddpscope run file";
    QTest::newRow("truncated") << "truncate"
                               << "damaged";
    QTest::newRow("newer schema") << "newer"
                                  << "newer ddpscope";
    QTest::newRow("other database") << "foreign"
                                    << "not a ddpscope run file";
    QTest::newRow("missing") << "missing"
                             << "check that the file exists";
    // Packs are compressed: a file may claim no more spans than one per 2 of its bytes
    // (zstd's runs of zeros made 6.7 billion spans of an 8.7 MB file; issue 49).
    QTest::newRow("claims more spans than it can hold") << "dense"
                                                        << "more than one span per 2 bytes";
  }
  void testBadFilesGetClearErrors() {
    QFETCH(QString, damage);
    QFETCH(QString, expected);
    const std::string file = path(qPrintable("bad-" + damage + ".ddprun"));
    if (damage == "garbage") {
      QFile f(QString::fromStdString(file));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray(8192, 'x'));
    } else if (damage == "truncate") {
      {
        RunStoreWriter w(file);
        w.begin_run({});
        for (int i = 0; i < 200; ++i)
          w.write(known_iteration(i % 4));
      }
      QFile f(QString::fromStdString(file));
      QVERIFY(f.size() > 32768);
      QVERIFY(f.resize(f.size() / 2));
    } else if (damage == "newer") {
      { RunStoreWriter w(file); }
      SqliteDb db(file, SQLITE_OPEN_READWRITE);
      db.exec("PRAGMA user_version = 99");
    } else if (damage == "dense") {
      {
        RunStoreWriter w(file);
        w.begin_run({});
        w.write(known_iteration(0));
      }
      SqliteDb db(file, SQLITE_OPEN_READWRITE);
      db.exec("UPDATE span_packs SET count = 100000000 WHERE first_id = (SELECT min(first_id) FROM span_packs)");
    } else if (damage == "foreign") {
      SqliteDb db(file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
      db.exec("CREATE TABLE t(x)");
    }
    // Reading everything must end in a RunStoreError naming the problem, not a crash.
    QString message;
    try {
      RunStoreReader r(file);
      r.run();
      r.spans();
      r.ranks();
      r.buckets(0);
      r.metrics();
      const std::string verdict = r.integrity_check();
      message = QString::fromStdString("read without error; integrity: " + verdict);
    } catch (const RunStoreError& e) {
      message = QString::fromStdString(e.message());
    }
    QVERIFY2(message.contains(expected), qPrintable(message));
    // A writer refuses the same files (except a missing one, which it creates).
    if (damage == "newer" || damage == "foreign") {
      QVERIFY_THROWS_EXCEPTION(RunStoreError, RunStoreWriter w(file));
    }
  }
};

QTEST_GUILESS_MAIN(TestRunStore)
#include "tst_run_store.moc"
