// RPC when a worker dies, as real 3-process mpirun jobs (rpc_failure_probe): a call to a
// killed worker fails within its timeout naming it while the others go on serving, and
// the distributed autograd contexts a dead worker started are collected where they went.
#include <QtTest/QtTest>

#include <QProcess>
#include <QRegularExpression>
#include "test_registry.h"

class TestRpcFailures : public QObject {
  Q_OBJECT

  // Runs rpc_failure_probe MODE with 3 ranks; the job must end within 60 s.
  QString run(const QString& mode) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    p.setProcessEnvironment(env);
    p.setProcessChannelMode(QProcess::MergedChannels);
    // --enable-recovery: mpirun keeps the survivors running when a process dies.
    p.start(DDPSCOPE_MPIRUN,
            {"--oversubscribe", "--bind-to", "none", "--enable-recovery", "-np", "3", DDPSCOPE_PROBE_PATH, mode});
    if (!p.waitForStarted() || !p.waitForFinished(60000)) {
      p.kill();
      p.waitForFinished();
      return "the job hung or did not start:\n" + QString::fromUtf8(p.readAll());
    }
    return QString::fromUtf8(p.readAll());
  }

 private slots:
  void testKilledWorkerFailsCallsWithinTheirTimeout() {
    const QString out = run("killed");
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
  }

  // Beyond PyTorch (#26379): a context whose originating worker died is collected on the
  // workers it reached, within a bound, without any release message.
  void testContextsOfADeadWorkerAreCollected() {
    const QString out = run("dead-context");
    QVERIFY2(out.contains("worker 2: called worker1 in a context; killing myself"), qPrintable(out));
    const auto held = QRegularExpression("worker 0: worker1 holds (-?\\d+) contexts after (\\d+) ms").match(out);
    QVERIFY2(held.hasMatch(), qPrintable(out));
    QCOMPARE(held.captured(1).toInt(), 0);
    QVERIFY2(held.captured(2).toInt() < 5000, qPrintable(out));
    QVERIFY2(out.contains("dist_autograd: worker 2 is gone; released 1 of its contexts here"), qPrintable(out));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRpcFailures)
#include "tst_rpc_failures.moc"
