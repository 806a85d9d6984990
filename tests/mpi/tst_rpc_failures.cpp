// RPC when a worker dies: a real 3-process mpirun job (rpc_failure_probe) in which
// worker 2 is killed; a call to it fails within its timeout naming it, and the other
// workers go on serving.
#include <QtTest/QtTest>

#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>

class TestRpcFailures : public QObject {
  Q_OBJECT

 private slots:
  void testKilledWorkerFailsCallsWithinTheirTimeout() {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    p.setProcessEnvironment(env);
    p.setProcessChannelMode(QProcess::MergedChannels);
    QElapsedTimer timer;
    timer.start();
    // --enable-recovery: mpirun keeps the survivors running when a process dies.
    p.start(DDPSCOPE_MPIRUN, {"--oversubscribe", "--bind-to", "none", "--enable-recovery", "-np", "3",
                              DDPSCOPE_PROBE_PATH, "killed"});
    QVERIFY(p.waitForStarted());
    if (!p.waitForFinished(60000)) {
      p.kill();
      p.waitForFinished();
      QFAIL(qPrintable("the job hung:\n" + QString::fromUtf8(p.readAll())));
    }
    const QString out = QString::fromUtf8(p.readAll());
    QVERIFY2(out.contains("worker 2: killing myself"), qPrintable(out));
    // The call in flight fails when the connection breaks, long before its 5 s sleep
    // or 10 s timeout would end.
    const auto in_flight = QRegularExpression("worker 0: in flight: caught after (\\d+) ms: (.*)").match(out);
    QVERIFY2(in_flight.hasMatch(), qPrintable(out));
    QVERIFY2(in_flight.captured(1).toInt() < 4000, qPrintable(out));
    QVERIFY2(in_flight.captured(2).startsWith("the connection to worker2 (id 2) broke after"), qPrintable(out));
    QVERIFY2(in_flight.captured(2).contains("call of 'sleep_ms'"), qPrintable(out));
    // A new call fails within its 2 s timeout (at once: the agent knows the peer is gone).
    const auto later = QRegularExpression("worker 0: caught after (\\d+) ms: (.*)").match(out);
    QVERIFY2(later.hasMatch(), qPrintable(out));
    QVERIFY2(later.captured(1).toInt() <= 2200, qPrintable(out));
    QVERIFY2(later.captured(2).contains("worker2 (id 2)"), qPrintable(out));
    QVERIFY2(later.captured(2).contains("'add'"), qPrintable(out));
    QVERIFY2(out.contains("worker 0: worker1 still serves: 4"), qPrintable(out));
    QVERIFY2(out.contains("worker 0: done") && out.contains("worker 1: done"), qPrintable(out));
    QVERIFY2(timer.elapsed() < 30000, qPrintable(out));
  }
};

QTEST_GUILESS_MAIN(TestRpcFailures)
#include "tst_rpc_failures.moc"
