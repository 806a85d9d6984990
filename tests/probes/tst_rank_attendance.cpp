// Which ranks of a collected job came, when, and how often, in words: ranks that never
// joined (or not yet, while the run is written), ranks that joined late, and the attempts
// a restarted job ran, with the rank that failed first.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include "known_runs.h"
#include "rank_attendance.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

namespace {

std::string placement(int restart, int64_t t_ns) {
  return nlohmann::json{{"type", "placement"}, {"launcher", "slurm"}, {"restart", restart}, {"t_ns", t_ns}}.dump();
}

std::string rank_end(int restart, bool failed, int64_t t_ns) {
  return nlohmann::json{{"type", "rank_end"}, {"restart", restart}, {"failed", failed}, {"t_ns", t_ns}}.dump();
}

// A batch of rank `rank` carrying only `records`.
EventBatch records_of(int rank, std::vector<std::string> records) {
  EventBatch b;
  b.rank = rank;
  b.records = std::move(records);
  return b;
}

}  // namespace

class TestRankAttendance : public ScratchTest {
  Q_OBJECT

 private slots:
  void testEveryRankOnceSaysNothing() {
    const std::string file = path("all.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({"{}", 2, "torch", "torch script"});
      for (int rank = 0; rank < 2; ++rank)
        w.write(records_of(rank, {placement(0, 100 + rank), rank_end(0, false, 900)}));
      w.end_run("finished");
    }
    RunStoreReader run(file);
    const RankAttendance a = rank_attendance(run);
    QCOMPARE(a.attempts.size(), size_t{2});
    QCOMPARE(a.attempts_run, 1);
    QVERIFY(a.never_joined.empty());
    QVERIFY(attendance_findings(a).empty());
  }

  void testMissingRanksAreNotYetJoinedWhileRunningThenNeverJoined() {
    const std::string file = path("missing.ddprun");
    RunStoreWriter w(file);
    w.begin_run({"{}", 4, "torch", "torch script"});
    w.write(records_of(1, {placement(0, 100)}));
    {
      RunStoreReader run(file);
      const auto findings = attendance_findings(rank_attendance(run));
      QCOMPARE(findings.size(), size_t{1});
      QVERIFY2(findings[0].rfind("ranks 0, 2 and 3 of 4 have not joined yet: the run has nothing from them", 0) == 0,
               findings[0].c_str());
    }
    w.end_run("finished");
    RunStoreReader run(file);
    const auto findings = attendance_findings(rank_attendance(run));
    QVERIFY2(findings[0].rfind("ranks 0, 2 and 3 of 4 never joined", 0) == 0, findings[0].c_str());
  }

  // A world size is what the launcher claims: a million ranks are counted, not listed.
  void testAHugeClaimedWorldIsCountedNotListed() {
    const std::string file = path("huge.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"job":"collect"})", 1, "torch", "torch script"});
      w.write(records_of(1, {placement(0, 100), R"({"type":"settings","world_size":1048576,"values":{}})"}));
      w.end_run("finished");
    }
    RunStoreReader run(file);
    const RankAttendance a = rank_attendance(run);
    QCOMPARE(a.never_joined_count, int64_t{1048575});
    QCOMPARE(a.never_joined.size(), RankAttendance::kListed);
    const std::string said = attendance_findings(a).at(0);
    QVERIFY2(said.rfind("1048575 ranks (0 and 2..64, ...) of 1048576 never joined", 0) == 0, said.c_str());
  }

  void testALateRankIsNamedWithHowLate() {
    const std::string file = path("late.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({"{}", 3, "torch", "torch script"});
      w.write(records_of(0, {placement(0, 1'000'000'000)}));
      w.write(records_of(1, {placement(0, 2'000'000'000)}));  // 1 s: on time
      w.write(records_of(2, {placement(0, 13'500'000'000)}));
    }
    RunStoreReader run(file);
    const RankAttendance a = rank_attendance(run);
    QCOMPARE(a.late.size(), size_t{1});
    QCOMPARE(a.late[0].first, 2);
    QCOMPARE(attendance_findings(a),
             std::vector<std::string>{"rank 2 joined 12.5 s after the first rank of its attempt"});
  }

  void testAttemptsNameTheRankThatFailedFirst() {
    const std::string file = path("restarts.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({"{}", 3, "torch", "torch script"});
      for (int rank = 0; rank < 3; ++rank) {  // attempt 1: rank 2 fails first, then 0; rank 1 is killed
        EventBatch b = known_iteration(rank);
        b.records = {placement(0, 10)};
        if (rank != 1) b.records.push_back(rank_end(0, true, rank == 2 ? 500 : 700));
        w.write(b);
      }
      for (int rank = 0; rank < 3; ++rank) {
        EventBatch b = known_iteration(rank);
        b.records = {placement(1, 2000), rank_end(1, false, 3000)};
        w.write(b);
      }
    }
    RunStoreReader run(file);
    QCOMPARE(attendance_findings(rank_attendance(run)),
             std::vector<std::string>{"the job ran 2 attempts (torchrun restarted it 1 time): attempt 1 ended when "
                                      "rank 2 failed (then rank 0); attempt 2's iterations are numbered from 2"});
  }

  // A rank claiming restart 1,000,000 (issue 68: the app wrote a clause for every number up
  // to it, busy past 90 s): the attempts recorded are named, the rest counted, at once.
  void testAHugeAttemptNumberIsCountedNotEnumerated() {
    const std::string file = path("huge-attempt.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({"{}", 2, "torch", "torch script"});
      EventBatch zero = known_iteration(0);
      zero.records = {placement(0, 10), rank_end(0, true, 500)};
      w.write(zero);
      EventBatch one = known_iteration(1);
      one.records = {placement(1'000'000, 2000)};
      w.write(one);
    }
    RunStoreReader run(file);
    QElapsedTimer timer;
    timer.start();
    const auto findings = attendance_findings(rank_attendance(run));
    QVERIFY2(timer.elapsed() < 1000, qPrintable(QString::number(timer.elapsed())));
    QCOMPARE(findings.back(), std::string("the job ran 1000001 attempts (torchrun restarted it 1000000 times): attempt "
                                          "1 ended when rank 0 failed; 999999 earlier attempts left no rank's record; "
                                          "attempt 1000001's iterations are numbered from 2"));
  }

  // More than eight earlier attempts: the latest eight are named, the others counted.
  void testManyAttemptsListTheLatest() {
    const std::string file = path("many-attempts.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({"{}", 1, "torch", "torch script"});
      for (int attempt = 0; attempt < 12; ++attempt) {
        EventBatch b = known_iteration(0);
        b.records = {placement(attempt, 10 + attempt * 1000)};
        if (attempt < 11) b.records.push_back(rank_end(attempt, true, 500 + attempt * 1000));
        w.write(b);
      }
    }
    RunStoreReader run(file);
    const std::string text = attendance_findings(rank_attendance(run)).back();
    QVERIFY2(text.find("3 earlier attempts not listed; attempt 4 ended when rank 0 failed") != std::string::npos,
             text.c_str());
    QVERIFY(text.find("attempt 3 ended") == std::string::npos);
    QVERIFY2(text.find("attempt 11 ended when rank 0 failed; attempt 12's") != std::string::npos, text.c_str());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRankAttendance)
#include "tst_rank_attendance.moc"
