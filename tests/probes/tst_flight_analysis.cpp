// Hang verdicts from flight-recorder dumps written as PyTorch writes them (made_dumps.h):
// one job per class of mismatch, with 2 and with 8 ranks. Then ddpscope's own dump form
// (phase, iteration, trigger) for what only it records.
#include <QtTest/QtTest>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "flight_grid.h"
#include "flight_import.h"
#include "hang_analysis.h"
#include "run_store_reader.h"
#include "made_dumps.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::made_dumps;

class TestFlightAnalysis : public FlightDumpTest {
  Q_OBJECT

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

  // A host cut off while both ranks waited in the same allreduce: both its records and
  // both timeouts say alike, but rank 1's timeout could not reach the collector (its
  // dump was read from its file), rank 0's came over the stream. The truth is the cut.
  void testTimeoutOnlyInItsDumpNamesTheCutOffRank() {
    FlightData data = both_waiting();
    const int64_t started = data.by_rank.at(0).back().t_started_ns;
    for (auto& rows : data.by_rank)
      for (CollectiveRow& r : rows.second)
        r.source = "stream";  // the call left before the cut
    for (auto& d : data.dumps)
      d.trigger = "timeout", d.t_ns = started + 600'000'000'000;
    HangReport h = analyze_hang(data);
    QVERIFY2(h.culprits.empty(), h.verdict.c_str());  // every timeout read from a file: no evidence
    FlightDumpRow streamed = data.dumps[0];
    streamed.source = "stream";
    data.dumps.push_back(streamed);  // rank 0's timeout also arrived live
    h = analyze_hang(data);
    QCOMPARE(h.culprits, std::vector<int>{1});
    QVERIFY2(QString::fromStdString(h.verdict).contains("Rank 1's timeout in it reached the run file only through "
                                                        "its dump, the others' by the stream: its link to the "
                                                        "collector had stopped"),
             h.verdict.c_str());
    // The call itself came only by rank 1's dump: the earlier cue, the same culprit.
    for (CollectiveRow& r : data.by_rank.at(1))
      r.source = "dump";
    h = analyze_hang(data);
    QCOMPARE(h.culprits, std::vector<int>{1});
    QVERIFY2(QString::fromStdString(h.verdict).contains("Rank 1's records of it reached the run file only through "
                                                        "its dump: its link to the collector had stopped"),
             h.verdict.c_str());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightAnalysis)
#include "tst_flight_analysis.moc"
