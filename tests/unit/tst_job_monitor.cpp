// How a job's end is followed: a failing rank is named (in JSON progress too) within a
// minute with no rank left behind, and SIGTERM stops every rank.
#include <QtTest/QtTest>

#include "launcher_fixture.h"
#include "test_registry.h"

using namespace ddpscope::testing::launcher_fixture;

class TestJobMonitor : public LauncherTest {
  Q_OBJECT

 private slots:

  void testJsonProgressNamesTheFailedRank() {
    Result r = run({"train", "--np", "2", "--iters", "100000", "--progress", "json", "--no-probes"},
                   {{"DDPSCOPE_FAULT", "rank=1,iter=3"}});
    QVERIFY(r.code != 0);
    QVERIFY2(r.out.contains(R"(@ddpscope {"event":"failed","exit_code")"), qPrintable(r.out));
    QVERIFY2(r.out.contains(R"("rank":1)"), qPrintable(r.out));
  }

  void testFailedRankIsNamed() {
    Result r = run({"train", "--np", "2", "--iters", "100000"}, {{"DDPSCOPE_FAULT", "rank=1,iter=3"}});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.contains("error: the job failed: rank 1: injected fault (DDPSCOPE_FAULT) at iteration 3"),
             qPrintable(r.err));
    QVERIFY2(r.ms < 60000, qPrintable(QString("took %1 ms").arg(r.ms)));
    QCOMPARE(workers_running(), 0);
  }

  void testSigtermStopsEveryRank() {
    QProcess p;
    p.start(DDPSCOPE_CLI_PATH, {"train", "--np", "2", "--iters", "10000000", "--log-every", "1"});
    QVERIFY(p.waitForStarted());
    // Wait until the job trains (rank 0 reported progress).
    QElapsedTimer timer;
    timer.start();
    QString out;
    while (!out.contains("iter 2/") && timer.elapsed() < 60000) {
      p.waitForReadyRead(500);
      out += QString::fromUtf8(p.readAllStandardOutput());
    }
    QVERIFY2(out.contains("iter 2/"), qPrintable(out));
    QCOMPARE(workers_running(2), 2);
    kill(static_cast<pid_t>(p.processId()), SIGTERM);
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 130);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("stopped by a signal"));
    QCOMPARE(workers_running(), 0);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestJobMonitor)
#include "tst_job_monitor.moc"
