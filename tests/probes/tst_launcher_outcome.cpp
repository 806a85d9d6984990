// The job's end as the launcher tells the collector (launcher_outcome.h) and as the run file
// keeps it (run_end.h, schema 16): every field survives the line, the file and the reader;
// a failure that ended no collective stores none; a line with fields of the wrong type, or
// no object at all, reads as those fields not said.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include "launcher_outcome.h"
#include "run_store_reader.h"
#include "run_store_writer.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::probes;

class TestLauncherOutcome : public ScratchTest {
  Q_OBJECT

  static RunRow stored(const std::string& file, const RunEnd& end) {
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      w.end_run(end);
    }
    return RunStoreReader(file).run();
  }

 private slots:
  void testEveryFieldSurvivesTheLineAndTheFile() {
    const LauncherOutcome sent{{"failed", "Zeitüberschreitung", 1, 0, "signal 6 (Aborted)", {"allreduce", 1454, true}},
                               {{0, "gone"}, {1, "T"}}};
    const std::string line = outcome_line(sent);
    QVERIFY2(line.back() == '\n' && line.find('\n') == line.size() - 1, line.c_str());
    const LauncherOutcome got = outcome_of(nlohmann::json::parse(line));
    QCOMPARE(got.end.status, std::string("failed"));
    QCOMPARE(got.end.message, std::string("Zeitüberschreitung"));
    QCOMPARE(got.end.failed_rank, 1);
    QCOMPARE(got.end.dead_rank, 0);
    QCOMPARE(got.end.dead_signal, std::string("signal 6 (Aborted)"));
    QCOMPARE(got.end.failed.op, std::string("allreduce"));
    QCOMPARE(got.end.failed.seq, int64_t{1454});
    QVERIFY(got.end.failed.timed_out);
    QCOMPARE(got.rank_states, sent.rank_states);

    const RunRow row = stored(path("typed.ddprun"), got.end);
    QCOMPARE(row.status, std::string("failed"));
    QCOMPARE(row.failed_rank, 1);
    QCOMPARE(row.dead_rank, 0);
    QCOMPARE(row.failed.op, std::string("allreduce"));
    QCOMPARE(row.failed.seq, int64_t{1454});
    QVERIFY(row.failed.timed_out);
  }

  // A failure outside any collective (a bad batch) types none: the line and the file say none.
  void testAFailureOfNoCollectiveStoresNone() {
    const LauncherOutcome sent{{"failed", "ValueError: bad batch", 1, -1, {}, {}}, {}};
    const std::string line = outcome_line(sent);
    QVERIFY2(line.find("failed_op") == std::string::npos, line.c_str());
    const RunRow row = stored(path("untyped.ddprun"), outcome_of(nlohmann::json::parse(line)).end);
    QVERIFY(!row.failed.known());
    QVERIFY(!row.failed.timed_out);
    // A collective that failed without running out of time is stored as such.
    const RunRow lost = stored(path("lost.ddprun"), {"failed", "peer gone", 0, -1, {}, {"broadcast", 3, false}});
    QCOMPARE(lost.failed.seq, int64_t{3});
    QVERIFY(!lost.failed.timed_out);
  }

  void testOddLinesReadAsNotSaid() {
    const LauncherOutcome odd = outcome_of(nlohmann::json::parse(
        R"({"status":7,"failed_rank":"one","failed_op":"allreduce","failed_seq":"x","rank_states":{"a":"T","2":5,"3":"R"}})"));
    QCOMPARE(odd.end.status, std::string("finished"));
    QCOMPARE(odd.end.failed_rank, -1);
    QVERIFY(!odd.end.failed.known());
    QCOMPARE(odd.rank_states, (std::map<int, std::string>{{3, "R"}}));
    QCOMPARE(outcome_of(nlohmann::json::parse("[1,2]")).end.status, std::string("finished"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLauncherOutcome)
#include "tst_launcher_outcome.moc"
