// Run > Collect from a job...: the app starts a collector alone, shows the lines for the
// job's shell, and follows the run as a plain shell loop (not ddpscope) starts an
// unchanged 2-rank PyTorch DDP script with the prefix: each rank listed with its host and
// state, the collection ending by itself once both ranks ended. And `ddpscope --follow`:
// a run file another process's collector writes, followed until it ends.
#include <QtTest/QtTest>

#include <QComboBox>
#include <QHostInfo>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QTcpServer>
#include <QTemporaryDir>

#include "collect_dialog.h"
#include "live_monitor.h"
#include "live_run_loader.h"
#include "main_window.h"
#include "test_registry.h"

using namespace ddpscope::gui;

namespace {

// A port nothing listens on now, for the job's MASTER_PORT: tests run side by side.
int freePort() {
  QTcpServer probe;
  probe.listen(QHostAddress::LocalHost, 0);
  return probe.serverPort();
}

// What a site's wrapper does: one process per rank, torchrun's variables and the prefix.
QProcess* startShellLoop(const QString& prefix, const QString& dir, int port, QObject* parent) {
  QStringList lines = {QStringLiteral("pids=")};
  for (int r = 0; r < 2; ++r)
    lines << QStringLiteral(
                 "%1 RANK=%2 LOCAL_RANK=%2 GROUP_RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=%3 "
                 "/usr/bin/python3 %4 --user-hook --iters 4 --counts %5/counts & pids=\"$pids $!\"")
                 .arg(prefix)
                 .arg(r)
                 .arg(port)
                 .arg(QStringLiteral(DDPSCOPE_TORCH_SCRIPT), dir);
  lines << QStringLiteral("for p in $pids; do wait $p || exit 1; done");
  auto* job = new QProcess(parent);
  job->setProcessChannelMode(QProcess::MergedChannels);
  job->start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), lines.join('\n')});
  return job;
}

QString cell(QTableWidget* t, int row, int column) {
  const QTableWidgetItem* item = t->item(row, column);
  return item ? item->text() : QString();
}

}  // namespace

class TestCollectDialog : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    qputenv("DDPSCOPE_CLI", DDPSCOPE_CLI_PATH);
    QVERIFY(m_workspace.isValid());
  }

  void testTheAppFollowsAJobAnotherLauncherStarts() {
    MainWindow w(m_workspace.path());
    w.setStallTimeoutMs(500);  // so that the quiet wait below would be called a hang if it could be
    w.show();
    w.showCollectDialog();
    CollectDialog* d = w.collectDialog();
    QVERIFY(d && d->isVisible());
    QCOMPARE(d->hostBox()->currentData().toString(), QStringLiteral("127.0.0.1"));  // safe by default
    d->expectBox()->setValue(2);
    QSignalSpy said(w.statusBar(), &QStatusBar::messageChanged);
    d->startButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(d->instructions()->toPlainText().contains("export DDPSCOPE_COLLECTOR="), 20000);
    // The collector's lines in the status bar speak to the app's user: no "(or Ctrl-C)".
    QTRY_VERIFY_WITH_TIMEOUT(
        std::any_of(said.begin(), said.end(),
                    [](const QList<QVariant>& a) { return a.front().toString().startsWith("Waiting for 2 ranks"); }),
        10000);
    for (const QList<QVariant>& a : said)
      QVERIFY2(!a.front().toString().contains("Ctrl-C"), qPrintable(a.front().toString()));
    QVERIFY(d->instructions()->toPlainText().contains("export DDPSCOPE_RUN_TOKEN="));
    QVERIFY(d->prefix().startsWith("env DDPSCOPE_COLLECTOR="));
    QVERIFY(w.isFollowingJob());
    QVERIFY(!d->hostBox()->isEnabled());  // the collector listens where it listens
    QVERIFY(w.part<LiveRunLoader>()->isWatching());
    QTest::qWait(1500);  // no rank yet: a quiet run file is not a hang
    QVERIFY(!w.part<LiveRunLoader>()->isStalled());

    QProcess* job = startShellLoop(d->prefix(), m_workspace.path(), freePort(), this);
    QVERIFY(job->waitForFinished(180000));
    QVERIFY2(job->exitCode() == 0, job->readAll().constData());
    // Both ranks end: the collector stops by itself (2 expected) and the dialog says so.
    QTRY_VERIFY_WITH_TIMEOUT(d->statusLabel()->text().contains("The collection ended"), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(d->rankTable()->rowCount(), 2, 10000);
    for (int r = 0; r < 2; ++r) {
      QCOMPARE(cell(d->rankTable(), r, 0), QString::number(r));
      // The host arrives with the rank's attendance record, which may follow its row.
      QTRY_COMPARE_WITH_TIMEOUT(cell(d->rankTable(), r, 1), QHostInfo::localHostName(), 10000);
      QCOMPARE(cell(d->rankTable(), r, 2), QString::number(r));  // local rank, as torchrun's variables said
    }
    QVERIFY(w.currentRun());
    QCOMPARE(w.currentRun()->ranks.size(), size_t{2});
    QCOMPARE(w.currentRun()->attendance.attempts.size(), size_t{2});
    QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(w.currentRun()->run.status), QStringLiteral("finished"), 10000);
    QVERIFY(w.currentRun()->analysis.iterations.size() >= 2 * 3);  // each rank's iterations, as it trained them
  }

  void testACollectorThatCannotListenSaysWhy() {
    QTcpServer taken;
    QVERIFY(taken.listen(QHostAddress::LocalHost));
    MainWindow w(m_workspace.path());
    w.showCollectDialog();
    CollectDialog* d = w.collectDialog();
    d->portBox()->setValue(taken.serverPort());
    d->startButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(d->statusLabel()->text().contains("The collection ended:"), 20000);
    QVERIFY2(d->statusLabel()->text().contains(QString::number(taken.serverPort())),
             qPrintable(d->statusLabel()->text()));
  }

  void testFollowingARunFileAnotherProcessWrites() {
    // `ddpscope-cli collect --follow` starts the app on its run: here an app that notes
    // how it was asked, then the real window follows the same file.
    const QString run = m_workspace.filePath("followed.ddprun");
    const QString asked = m_workspace.filePath("asked.txt");
    const QString fakeApp = m_workspace.filePath("fake-app.sh");
    QFile script(fakeApp);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(QStringLiteral("#!/bin/sh\necho \"$@\" > %1\n").arg(asked).toUtf8());
    script.close();
    script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
    QProcess collect;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("DDPSCOPE_APP", fakeApp);
    env.insert("QT_QPA_PLATFORM", "offscreen");  // a display, as far as --follow asks
    collect.setProcessEnvironment(env);
    collect.start(DDPSCOPE_CLI_PATH, {"collect", "--out", run, "--expect", "2", "--follow"});
    QString printed, prefix;
    QTRY_VERIFY_WITH_TIMEOUT((printed += QString::fromUtf8(collect.readAllStandardOutput())).contains("Waiting for"),
                             20000);
    for (const QString& line : printed.split('\n'))
      if (line.trimmed().startsWith("env DDPSCOPE_COLLECTOR=")) prefix = line.trimmed();
    QVERIFY(!prefix.isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(asked), 10000);
    QFile note(asked);
    QVERIFY(note.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(note.readAll()).trimmed(), QStringLiteral("--follow %1").arg(run));

    MainWindow w(m_workspace.path());
    QString error;
    QVERIFY2(w.followRunFile(run, &error), qPrintable(error));
    QVERIFY(w.part<LiveRunLoader>()->isWatching());
    QProcess* job = startShellLoop(prefix, m_workspace.path(), freePort(), this);
    QVERIFY(job->waitForFinished(180000));
    QVERIFY2(job->exitCode() == 0, job->readAll().constData());
    QVERIFY(collect.waitForFinished(30000));
    // The collector ended the run: the window shows its last state and stops re-reading.
    QTRY_VERIFY_WITH_TIMEOUT(!w.part<LiveRunLoader>()->isWatching(), 10000);
    QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(w.currentRun()->run.status), QStringLiteral("finished"), 10000);
    QCOMPARE(w.currentRun()->ranks.size(), size_t{2});
  }

  void testFollowingAFileThatIsNotThereIsRefused() {
    MainWindow w(m_workspace.path());
    QString error;
    QVERIFY(!w.followRunFile(m_workspace.filePath("nothing.ddprun"), &error));
    QVERIFY2(error.contains("does not exist") && error.contains("start the collector first"), qPrintable(error));
  }

 private:
  QTemporaryDir m_workspace;
};

DDPSCOPE_TEST_MAIN(TestCollectDialog)
#include "tst_collect_dialog.moc"
