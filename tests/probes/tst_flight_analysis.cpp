// Hang verdicts from flight-recorder dumps written here from PyTorch's documented fields
// (version, pg_config, entries with record_id, pg_id, process_group, collective_seq_id,
// p2p_seq_id, op_id, profiling_name, input/output sizes and dtypes, state, time_*_ns,
// duration_ms, timeout_ms, frames), one file per rank named as PyTorch names them: one job
// per class of mismatch, with 2 and with 8 ranks. Then ddpscope's own dump form (phase,
// iteration, trigger) for what only it records, and the import of dumps into a run file.
#include <QtTest/QtTest>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "flight_grid.h"
#include "flight_import.h"
#include "hang_analysis.h"
#include "run_store_reader.h"
#include "scratch_test.h"

using namespace ddpscope::probes;
using nlohmann::json;

namespace {

struct Call {
  std::string op = "all_reduce";
  std::vector<int64_t> shape = {1024};
  std::string dtype = "Float";
  std::string state = "completed";
  std::string phase;  // ddpscope's field; PyTorch's dumps have none
  int iteration = -1;
};

// One rank's dump: its calls of group "0" in sequence order, from collective #0.
json torch_dump(int world, const std::vector<Call>& calls, int64_t t0 = 1'000'000'000) {
  std::string ranks = "[";
  for (int r = 0; r < world; ++r)
    ranks += (r ? ", " : "") + std::to_string(r);
  ranks += "]";
  json entries = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    const int64_t created = t0 + static_cast<int64_t>(i) * 1'000'000;
    json e = {{"record_id", i},
              {"pg_id", 0},
              {"process_group", {"0", "default_pg"}},
              {"collective_seq_id", i + 1},
              {"p2p_seq_id", 0},
              {"op_id", i + 1},
              {"profiling_name", "nccl:" + c.op},
              {"time_created_ns", created},
              {"input_sizes", {c.shape}},
              {"input_dtypes", {c.dtype}},
              {"output_sizes", {c.shape}},
              {"output_dtypes", {c.dtype}},
              {"state", c.state},
              {"time_discovered_started_ns", c.state == "scheduled" ? json(nullptr) : json(created + 1000)},
              {"time_discovered_completed_ns", c.state == "completed" ? json(created + 5000) : json(nullptr)},
              {"retired", c.state == "completed"},
              {"timeout_ms", 600000},
              {"is_p2p", false},
              {"duration_ms", c.state == "completed" ? json(0.004) : json(nullptr)},
              {"frames",
               {{{"name", "all_reduce"}, {"filename", "distributed_c10d.py"}, {"line", 2501}},
                {{"name", "forward"}, {"filename", "train.py"}, {"line", 42}}}}};
    if (!c.phase.empty()) e["phase"] = c.phase, e["iteration"] = c.iteration;
    entries.push_back(e);
  }
  return {{"version", "2.4"},
          {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", ranks}}}}},
          {"pg_status", {{"0", {{"last_enqueued_collective", calls.size()}}}}},
          {"entries", entries}};
}

// Five collectives every rank completed, then what the scenario makes of the sixth.
std::vector<Call> healthy(int n = 5) { return std::vector<Call>(static_cast<size_t>(n)); }

}  // namespace

class TestFlightAnalysis : public ScratchTest {
  Q_OBJECT

  // Writes nccl_trace_rank_<r> for every rank (calls_of(r)) and analyzes them.
  HangReport analyze(int world, const std::function<std::vector<Call>(int)>& calls_of,
                     std::vector<std::string>* files = nullptr) {
    std::vector<std::string> paths;
    for (int r = 0; r < world; ++r) {
      const std::string p = path(("nccl_trace_rank_" + std::to_string(r)).c_str());
      std::ofstream(p) << torch_dump(world, calls_of(r)).dump();
      paths.push_back(p);
    }
    if (files) *files = paths;
    return analyze_hang(read_flight_dumps(paths));
  }

  // Two ranks that both started collective #6 and never completed it, read back from
  // their dumps (the tests then say which rank's watchdog did what).
  FlightData both_waiting() {
    std::vector<std::string> files;
    analyze(
        2,
        [](int) {
          std::vector<Call> calls = healthy();
          calls.push_back({.state = "started"});
          return calls;
        },
        &files);
    return read_flight_dumps(files);
  }

  static const GroupFinding& finding(const HangReport& h) {
    if (h.flight.groups.empty()) throw std::runtime_error("no group");
    return h.flight.groups.front();
  }

 private slots:
  void testEachClass_data() {
    QTest::addColumn<int>("world");
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<int>("cls");
    QTest::addColumn<QString>("words");
    for (int world : {2, 8}) {
      const auto row = [&](const char* s, MatchClass c, const char* words) {
        QTest::addRow("%s, %d ranks", s, world) << world << s << static_cast<int>(c) << words;
      };
      row("missing", MatchClass::MissingRanks, "never called all_reduce Float[1024] #6");
      row("type", MatchClass::TypeMismatch, "called broadcast Float[1024]");
      row("size", MatchClass::SizeMismatch, "called all_reduce Float[2048]");
      row("dtype", MatchClass::DtypeMismatch, "called all_reduce Half[1024]");
      row("state", MatchClass::StateMismatch, "never completed all_reduce Float[1024]");
    }
  }
  void testEachClass() {
    QFETCH(int, world);
    QFETCH(QString, scenario);
    QFETCH(int, cls);
    QFETCH(QString, words);
    const int culprit = world - 1;  // the last rank misbehaves
    const HangReport h = analyze(world, [&](int r) {
      std::vector<Call> calls = healthy();
      Call next;
      next.state = "started";
      if (r == culprit) {
        if (scenario == "missing") return calls;  // never calls #6
        if (scenario == "type") next.op = "broadcast";
        if (scenario == "size") next.shape = {2048};
        if (scenario == "dtype") next.dtype = "Half";
      } else if (scenario == "state") {
        next.state = "completed";
      }
      calls.push_back(next);
      return calls;
    });
    const GroupFinding& f = finding(h);
    QCOMPARE(static_cast<int>(f.cls), cls);
    QCOMPARE(f.group, std::string("0"));
    QCOMPARE(f.seq, int64_t(6));
    QVERIFY2(QString::fromStdString(h.verdict).contains(words), h.verdict.c_str());
    QVERIFY2(QString::fromStdString(h.verdict).contains(match_class_name(f.cls)), h.verdict.c_str());
    // Two ranks that disagree are a tie: the records cannot say which side is wrong.
    const bool tie = world == 2 && (scenario == "type" || scenario == "size" || scenario == "dtype");
    if (tie) {
      QVERIFY2(QString::fromStdString(h.verdict).contains("do not say which side"), h.verdict.c_str());
    } else {
      QCOMPARE(h.culprits, std::vector<int>{culprit});
      QVERIFY2(h.verdict.starts_with("Group '0' collective #6: ") &&
                   QString::fromStdString(h.verdict).contains(QString("Rank %1 ").arg(culprit)),
               h.verdict.c_str());
    }
    QCOMPARE(f.calls.size(), size_t(scenario == "missing" ? world - 1 : world));
    // PyTorch's dumps hold no phase: where the call came from is the stack's top frame.
    QVERIFY2(QString::fromStdString(h.verdict).contains("all_reduce at distributed_c10d.py:2501"), h.verdict.c_str());
  }

  void testFullyMatchedAndCompletedHasNoVerdict() {
    const HangReport h = analyze(8, [](int) { return healthy(6); });
    QVERIFY2(h.verdict.empty(), h.verdict.c_str());
    QVERIFY(h.culprits.empty());
    QCOMPARE(finding(h).cls, MatchClass::FullyMatched);
    QVERIFY(!finding(h).pending);
  }

  void testEveryRankStillInTheLastOneNamesNoCulpritWithoutEvidence() {
    const HangReport h = analyze(2, [](int) {
      std::vector<Call> calls = healthy();
      calls.push_back({.state = "started"});
      return calls;
    });
    QCOMPARE(finding(h).cls, MatchClass::FullyMatched);
    QVERIFY(finding(h).pending);
    QVERIFY(h.culprits.empty());
    QVERIFY2(QString::fromStdString(h.verdict).contains("no rank's records say which one stalled it"),
             h.verdict.c_str());
  }

  void testGridAroundTheFinding() {
    const HangReport h = analyze(2, [](int r) {
      std::vector<Call> calls = healthy();
      if (r == 0) calls.push_back({.state = "started"});
      return calls;
    });
    const FlightGrid g = flight_grid(h.records, finding(h), 2, 2);
    QCOMPARE(g.ranks, (std::vector<int>{0, 1}));
    QCOMPARE(g.seqs, (std::vector<int64_t>{4, 5, 6}));
    QVERIFY(g.cell(0, 2) && g.cell(0, 2)->state == "started");
    QVERIFY(!g.cell(1, 2));
    const QString text = QString::fromStdString(flight_grid_text(g));
    QVERIFY2(text.contains(">#6") && text.contains("last: #5"), qPrintable(text));
  }

  // ddpscope's dumps say from which phase and iteration each call came.
  void testSkippedCollectiveIsNamedFromPhases() {
    const HangReport h = analyze(2, [](int r) {
      std::vector<Call> calls = healthy();
      if (r == 0)
        calls.push_back({.shape = {}, .dtype = "f64", .state = "started", .phase = "loss allreduce", .iteration = 3});
      else
        calls.push_back({.shape = {4096}, .dtype = "f32", .state = "started", .phase = "backward", .iteration = 4});
      return calls;
    });
    QVERIFY(finding(h).skipped);
    QCOMPARE(h.culprits, std::vector<int>{1});
    QVERIFY2(QString::fromStdString(h.verdict).contains("Rank 1 skipped a collective: it never called all_reduce "
                                                        "f64[] in loss allreduce of iteration 3"),
             h.verdict.c_str());
  }

  void testRankThatChangedFromItsPreviousIterationIsTheCulprit() {
    const auto calls_of = [](int r) {
      std::vector<Call> calls;
      for (int it = 1; it <= 3; ++it) {
        calls.push_back({.phase = "backward", .iteration = it});
        Call loss{.shape = {}, .dtype = "f64", .phase = "loss allreduce", .iteration = it};
        if (it == 3) {
          loss.state = "started";
          if (r == 0) loss.op = "broadcast";  // rank 0 changed
        }
        calls.push_back(loss);
      }
      return calls;
    };
    const HangReport h = analyze(2, calls_of);
    QCOMPARE(finding(h).cls, MatchClass::TypeMismatch);
    QCOMPARE(h.culprits, std::vector<int>{0});
    QVERIFY2(QString::fromStdString(h.verdict).contains("it changed, not rank 1"), h.verdict.c_str());
  }

  // A rank stopped while the other waited: the waiting rank's watchdog dumps on time; the
  // stopped one's fires only once it runs again, long after its deadline.
  void testLateTimeoutMarksTheStoppedRank() {
    FlightData data = both_waiting();
    const int64_t started = data.by_rank.at(0).back().t_started_ns;
    data.dumps[0].trigger = data.dumps[1].trigger = "timeout";
    data.dumps[0].t_ns = started + 600'000'000'000;    // rank 0: at its deadline
    data.dumps[1].t_ns = started + 1'000'000'000'000;  // rank 1: 400 s late
    const HangReport h = analyze_hang(data);
    QCOMPARE(h.culprits, std::vector<int>{1});
    QVERIFY2(QString::fromStdString(h.verdict).contains("Rank 1 did not run for 400 s"), h.verdict.c_str());
  }

  // Its watchdog woke long after it asked to (the process was stopped): that rank stalled
  // the collective, though its own timeout came on time once it ran again.
  void testStalledWatchdogMarksTheStoppedRank() {
    FlightData data = both_waiting();
    const int64_t started = data.by_rank.at(0).back().t_started_ns;
    for (auto& d : data.dumps) {
      d.trigger = "timeout";
      d.t_ns = started + 600'000'000'000;
    }
    data.dumps[1].stall_ns = 590'000'000'000;  // 590 s without running, ended at its timeout
    data.dumps[1].stall_end_ns = started + 600'000'000'000;
    HangReport h = analyze_hang(data);
    QCOMPARE(h.culprits, std::vector<int>{1});
    QVERIFY2(QString::fromStdString(h.verdict).contains("Rank 1 did not run for 590 s"), h.verdict.c_str());
    // A short stall (a busy machine) is no evidence.
    data.dumps[1].stall_ns = 2'000'000'000;
    h = analyze_hang(data);
    QVERIFY(h.culprits.empty());
  }

  void testDumpsImportAsARunWithTheSameVerdict() {
    std::vector<std::string> files;
    const HangReport direct = analyze(
        8,
        [](int r) {
          std::vector<Call> calls = healthy();
          if (r != 3) calls.push_back({.state = "started"});
          return calls;
        },
        &files);
    const std::string out = path("imported.ddprun");
    const FlightImportResult result = import_flight_dumps(files, out);
    QCOMPARE(result.world_size, 8);
    QCOMPARE(result.records, int64_t(8 * 5 + 7));
    RunStoreReader run(out);
    QCOMPARE(run.run().status, std::string("failed"));
    const HangReport from_run = analyze_hang(run);
    QCOMPARE(from_run.culprits, std::vector<int>{3});
    QCOMPARE(from_run.verdict.substr(0, 120), direct.verdict.substr(0, 120));
    // Each record with times is a process-group op on its rank's timeline.
    const auto spans = run.spans();
    QCOMPARE(std::count_if(spans.begin(), spans.end(), [](const SpanRow& s) { return s.kind == Kind::PgOp; }),
             long(8 * 5));
    QVERIFY_THROWS_EXCEPTION(RunStoreError, import_flight_dumps(files, out));  // exists, no force
  }

  void testTwoDumpsOfOneRankAreRefused() {
    const std::string a = path("a_rank_1"), b = path("b_rank_1");
    std::ofstream(a) << torch_dump(2, healthy()).dump();
    std::ofstream(b) << torch_dump(2, healthy()).dump();
    try {
      read_flight_dumps({a, b});
      QFAIL("read two dumps of rank 1");
    } catch (const RunStoreError& e) {
      QVERIFY2(QString(e.what()).contains("both rank 1's dump"), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestFlightAnalysis)
#include "tst_flight_analysis.moc"
