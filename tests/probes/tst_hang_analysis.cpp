// The hang verdict on runs that failed in a collective: who entered, who did not, who
// was stuck in an earlier one, what the typed failure alone says (never the words of the
// message: the same verdict in any language), ranks without events, and collectives that
// differ between ranks.
#include <QtTest/QtTest>

#include "hang_processes.h"
#include "known_runs.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

// Rank 0's failure as it typed it: allreduce #5, its wait out of time.
const FailedCollective kTimedOutIn5{"allreduce", 5, true};

class TestHangAnalysis : public ScratchTest {
  Q_OBJECT

 private slots:

  // The verdict when every rank entered the collective and one timed out: the ranks that
  // never timed out themselves (stopped, or stuck inside the transfer) are the culprits,
  // not the rank that reported it. Both ranks start allreduce #5; neither finishes it.
  void testHangVerdictWhenEveryRankEntered() {
    const HangReport report = hang_of_failed_run(
        path("entered.ddprun"), [](int) { return std::vector<BatchEvent>{allreduce_started(5, 4096, 1100)}; },
        "timeout: rank 0 waited 4000 ms in allreduce #5. MPI cannot cancel it", kTimedOutIn5);
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
        b.names = {"iteration", "allreduce"};
        b.events.push_back(BatchEvent{0, 1000, -1, -1, -1, 1, -1, 0, -1, -1, 0, uint8_t(Kind::Iteration), 0});
        b.events.push_back(allreduce_started(5, 4096, 1100));
        // Its probe's collective_failed instant: allreduce #5, timed out (param 1).
        if (rank == 0)
          b.events.push_back(BatchEvent{5200, 5200, -1, 5, -1, 2, 1, 1, -1, -1, 1, uint8_t(Kind::CollectiveFailed), 0});
        w.write(b);
      }
      // Its error's words in another language: only the typed instant says "timed out".
      w.end_run("failed", "rank 0: RuntimeError: Zeitüberschreitung beim Warten auf den Partner", 0);
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

  // A job stopped while rank 0 waited in allreduce #5 (issue 66): its waits run to the stop
  // the collector recorded (schema 13), not to its last event; a finished run's to its last
  // event (its end is only the collector's teardown), and a file without the stop's time too.
  void testAStoppedRunsWaitsRunToTheStop() {
    auto write = [&](const std::string& file, const char* status, int64_t ended_ns) {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      EventBatch b;
      b.rank = 0;
      b.threads = {{0, 100, "compute"}};
      b.names = {"iteration", "allreduce"};
      b.events.push_back(BatchEvent{0, 1000, -1, -1, -1, 1, -1, 0, -1, -1, 0, uint8_t(Kind::Iteration), 0});
      b.events.push_back(allreduce_started(5, 4096, 1100));
      w.write(b);
      w.end_run(status, "stopped by a signal");
      if (ended_ns >= 0) w.set_ended_ns(ended_ns);
    };
    const int64_t stop = 60'000'001'100;  // 60 s after the allreduce began
    write(path("stopped.ddprun"), "stopped", stop);
    write(path("finished.ddprun"), "finished", stop);
    write(path("stopped-no-time.ddprun"), "stopped", -1);
    auto waited_s = [&](const char* name) {
      RunStoreReader run(path(name));
      const HangReport report = analyze_hang(run);
      return (report.now_ns - report.latest_event_ns) / 1e9;  // the allreduce's start is the last event
    };
    QCOMPARE(RunStoreReader(path("stopped.ddprun")).run().ended_ns, stop);
    QCOMPARE(waited_s("stopped.ddprun"), 60.0);  // 60 s: the allreduce began 1100 ns in
    QVERIFY(waited_s("finished.ddprun") < 1e-3);
    QVERIFY(waited_s("stopped-no-time.ddprun") < 1e-3);
    RunStoreReader stopped(path("stopped.ddprun"));
    std::string text;
    for (const std::string& line : analyze_hang(stopped).findings)
      text += line + "\n";
    QVERIFY2(text.find("rank 0 waits in allreduce #5 (4 KiB) since 60 s") != std::string::npos, text.c_str());
  }

  // Ranks of a running job that cannot answer (hang_processes.h): stopped, traced or gone
  // mid-training are said so with their pid; a rank that finished its iterations, one that
  // runs, and one on another host (no state) are not.
  void testRanksThatCannotAnswer() {
    HangReport report;
    std::vector<RankRow> ranks;
    for (int r = 0; r < 6; ++r) {
      RankHangState st;
      st.rank = r;
      st.phase = r == 4 ? HangPhase::Done : HangPhase::InBackward;
      report.ranks.push_back(st);
      RankRow row;
      row.rank = r;
      row.pid = 100 + r;
      ranks.push_back(row);
    }
    report.verdict = "Rank 1 never called allreduce #5.";
    report.findings = {report.verdict, "rank 0 waits"};
    add_unanswering_ranks(report, ranks, {{0, 'S'}, {1, 'T'}, {2, 't'}, {3, 0}, {4, 0}});
    QCOMPARE(report.unanswering.size(), size_t{3});
    QCOMPARE(report.unanswering[0].first, 1);
    QCOMPARE(report.unanswering[2], (std::pair<int, std::string>{3, "has exited"}));
    QVERIFY2(
        report.verdict.find("Rank 1 did not answer: its process (pid 101) is stopped by a signal") != std::string::npos,
        report.verdict.c_str());
    QVERIFY(report.verdict.find("Rank 2 did not answer: its process (pid 102) is stopped by a debugger") !=
            std::string::npos);
    QVERIFY(report.verdict.find("Rank 4") == std::string::npos);  // finished: its process ended
    QVERIFY(report.verdict.find("Rank 5") == std::string::npos);  // another host's: not known
    QCOMPARE(report.findings.front(), report.verdict);
  }

  // A job that is over: ranks the launcher saw stopped when it ended the job are said, in the
  // past tense, not to have answered; a rank gone or running then is left to the run's own
  // message, and a rank with no recorded state (another host's) is not judged.
  void testRanksStoppedWhenTheJobWasEnded() {
    HangReport report;
    std::vector<RankRow> ranks;
    const std::vector<std::string> end_states = {"S", "T", "t", "gone", "Z", ""};
    for (int r = 0; r < 6; ++r) {
      RankHangState st;
      st.rank = r;
      st.phase = HangPhase::InBackward;
      report.ranks.push_back(st);
      RankRow row;
      row.rank = r;
      row.pid = 200 + r;
      row.end_state = end_states[static_cast<size_t>(r)];
      ranks.push_back(row);
    }
    add_ranks_stopped_at_the_end(report, ranks);
    QCOMPARE(report.unanswering.size(), size_t{2});
    QCOMPARE(report.unanswering[0],
             (std::pair<int, std::string>{
                 1, "was stopped by a signal (SIGSTOP or SIGTSTP) when the job was ended, so it ran no code"}));
    QCOMPARE(report.unanswering[1],
             (std::pair<int, std::string>{2, "was stopped by a debugger when the job was ended"}));
    QVERIFY2(report.verdict.rfind("Rank 1 did not answer: its process (pid 201) was stopped by a signal", 0) == 0,
             report.verdict.c_str());
    QCOMPARE(report.findings.front(), report.verdict);
  }

  // The reporter's own start of the op never reached the file (the job ended first): its
  // typed failure names the op and number, and the verdict still finds the culprit, whatever
  // language the message is in. Without the typed failure, the same words in English name
  // no collective: the verdict never reads them.
  void testHangVerdictFromTheTypedFailureAlone() {
    auto rank_1_never_started_5 = [](int rank) {  // rank 1 finished #4 and never started #5
      return rank == 1 ? std::vector<BatchEvent>{allreduce_done(4, 1000)} : std::vector<BatchEvent>{};
    };
    int n = 0;
    for (const std::string message :
         {"timeout: rank 0 waited 4000 ms in allreduce #5 f64[] (avg) on group 'world'",
          "Zeitüberschreitung: Rang 0 wartete 4000 ms in allreduce Nr. 5", "タイムアウト", ""}) {
      const HangReport report = hang_of_failed_run(path(("typed-" + std::to_string(++n) + ".ddprun").c_str()),
                                                   rank_1_never_started_5, message, kTimedOutIn5);
      QVERIFY2(QString::fromStdString(report.verdict)
                   .startsWith("Rank 1 never entered allreduce #5, which rank 0 waited in"),
               report.verdict.c_str());
      QCOMPARE(report.culprits, std::vector<int>{1});
    }
    const HangReport untyped =
        hang_of_failed_run(path("untyped.ddprun"), rank_1_never_started_5,
                           "timeout: rank 0 waited 4000 ms in allreduce #5 f64[] (avg) on group 'world'");
    // Only quoted: rank 0 reported it, and no culprit is drawn from its words.
    QVERIFY2(untyped.verdict.rfind("Rank 0 failed: timeout: rank 0 waited", 0) == 0, untyped.verdict.c_str());
    QVERIFY2(untyped.verdict.find("Rank 1") == std::string::npos, untyped.verdict.c_str());
    QCOMPARE(untyped.culprits, std::vector<int>{0});
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
        "timeout: rank 0 waited 4000 ms in allreduce #5 f64[] (avg) on group 'world'", kTimedOutIn5);
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
  // Both ways a rank reports a timeout (its group's watchdog, or the wait's backstop a
  // little later, which the fault suite also met) type the same failure; their words differ.
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
          message, kTimedOutIn5);
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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestHangAnalysis)
#include "tst_hang_analysis.moc"
