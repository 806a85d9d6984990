// Failure paths of ProcessGroupMPI, run as real mpirun jobs: a collective that times
// out ends the job with a message naming the op, and nothing hangs; a mismatch in
// debug mode fails on every rank naming both sides.
#include <QtTest/QtTest>

#include <QElapsedTimer>
#include <QProcess>
#include "test_registry.h"

class TestPgFailures : public QObject {
  Q_OBJECT

  struct Result {
    int code;
    QString output;
    qint64 ms;
  };
  Result run_probe(const QString& mode, bool debug) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    env.insert("DDPSCOPE_ABORT_GRACE_MS", "500");
    if (debug) env.insert("DDPSCOPE_DEBUG", "detail");
    p.setProcessEnvironment(env);
    p.setProcessChannelMode(QProcess::MergedChannels);
    QElapsedTimer timer;
    timer.start();
    p.start(DDPSCOPE_MPIRUN, {"--oversubscribe", "-np", "2", DDPSCOPE_PROBE_PATH, mode});
    if (!p.waitForFinished(60000)) {
      p.kill();
      p.waitForFinished();
      return {-1, QString::fromUtf8(p.readAll()), timer.elapsed()};
    }
    return {p.exitCode(), QString::fromUtf8(p.readAll()), timer.elapsed()};
  }

 private slots:
  void testTimeoutEndsTheJob() {
    Result r = run_probe("timeout", false);
    QVERIFY2(r.code != 0 && r.code != -1, qPrintable(r.output));
    QVERIFY2(r.output.contains("rank 0 caught: timeout: rank 0 waited 1000 ms in allreduce #0 f32[16, 4] (sum)"),
             qPrintable(r.output));
    QVERIFY2(r.output.contains("to enter the same allreduce"), qPrintable(r.output));
    // Rank 1 sleeps 30 s: the job must end long before that.
    QVERIFY2(r.ms < 20000, qPrintable(QString("took %1 ms").arg(r.ms)));
  }

  void testMismatchNamesBothSides() {
    Result r = run_probe("mismatch", true);
    const QString expected =
        "collective mismatch on group 'world': rank 0 allreduce #0 f32[1024] vs rank 1 broadcast "
        "#0 f32[10] root 0";
    QVERIFY2(r.output.contains("rank 0 caught: " + expected), qPrintable(r.output));
    QVERIFY2(r.output.contains("rank 1 caught: " + expected), qPrintable(r.output));
    QVERIFY(r.code != 0);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestPgFailures)
#include "tst_pg_failures.moc"
