// ddpscope-cli as a user runs it: progress lines when not on a terminal, clear errors
// and a non-zero exit for bad arguments.
#include <QtTest/QtTest>

#include <unistd.h>

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>

class TestCli : public QObject {
  Q_OBJECT

  struct Result {
    int code;
    QString out, err;
  };
  Result run(const QStringList& args) {
    QProcess p;
    p.start(DDPSCOPE_CLI_PATH, args);
    if (!p.waitForFinished(120000)) {
      p.kill();
      return {-1, {}, "timed out"};
    }
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
  }

 private slots:
  void testTrainShowsProgress() {
    Result r =
        run({"train", "--model", "mlp", "--iters", "20", "--batch", "16", "--log-every", "10"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("iter 1/20 loss"), qPrintable(r.out));
    QVERIFY2(r.out.contains("iter 10/20 loss"), qPrintable(r.out));
    QVERIFY2(r.out.contains("iter 20/20 loss"), qPrintable(r.out));
    QVERIFY2(r.out.contains("samples/s"), qPrintable(r.out));
    QVERIFY2(r.out.contains("done: 20 iterations"), qPrintable(r.out));
    QVERIFY(!r.out.contains('\r'));  // no bar when stdout is not a terminal
  }

  void testTerminalGetsABar() {
    // util-linux `script` gives the program a pseudo-terminal, as a user's shell would.
    const QString cmd = QString("%1 train --model mlp --iters 30 --batch 8").arg(DDPSCOPE_CLI_PATH);
    QProcess p;
    p.start("script", {"-qec", cmd, "/dev/null"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(out.contains('\r'), qPrintable(out));
    QVERIFY2(out.contains("[##############################] 30/30"), qPrintable(out));
    QVERIFY2(!out.contains("iter 1/30"), qPrintable(out));  // no plain lines on a terminal
    QVERIFY2(out.contains("done: 30 iterations"), qPrintable(out));
  }

  // A finished run is one file that anyone who can read it can open: in a read-only
  // folder, as another user (root runs this as 'nobody'), with nothing created beside it.
  void testReadOnlyRunOpensForAnotherUser() {
    QTemporaryDir dir;
    const QString run_file = dir.filePath("shared.ddprun");
    QCOMPARE(run({"train", "--iters", "3", "--batch", "8", "--out", run_file}).code, 0);
    const QStringList files = QDir(dir.path()).entryList(QDir::Files | QDir::Hidden);
    QCOMPARE(files, QStringList{"shared.ddprun"});  // no -wal, no -shm left by the writer
    QVERIFY(QFile::setPermissions(run_file, QFile::ReadOwner | QFile::ReadGroup | QFile::ReadOther));
    QVERIFY(QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::ExeOwner | QFile::ReadGroup |
                                                  QFile::ExeGroup | QFile::ReadOther | QFile::ExeOther));
    QProcess p;
    if (geteuid() == 0) {
      p.start("runuser", {"-u", "nobody", "--", DDPSCOPE_CLI_PATH, "stats", "--summary", run_file});
    } else {
      p.start(DDPSCOPE_CLI_PATH, {"stats", "--summary", run_file});
    }
    QVERIFY(p.waitForFinished(60000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitCode() == 0, qPrintable(err));
    QVERIFY(QString::fromUtf8(p.readAllStandardOutput()).contains("\"status\": \"finished\""));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), files);
    QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  }

  void testBadArguments_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown model") << QStringList{"train", "--model", "resnet"} << "resnet";
    QTest::newRow("zero iterations") << QStringList{"train", "--iters", "0"} << "--iters";
    QTest::newRow("negative batch") << QStringList{"train", "--batch", "-4"} << "--batch";
    QTest::newRow("not a number") << QStringList{"train", "--width", "wide"} << "--width";
    QTest::newRow("heads do not divide width")
        << QStringList{"train", "--model", "transformer", "--width", "30", "--heads", "4"}
        << "divisible";
    QTest::newRow("wrong data for model")
        << QStringList{"train", "--model", "transformer", "--data", "digits"} << "--data";
    QTest::newRow("negative learning rate")
        << QStringList{"train", "--lr", "-1"} << "must not be negative";
    QTest::newRow("no subcommand") << QStringList{} << "subcommand";
    QTest::newRow("data file for generated data")
        << QStringList{"train", "--data", "regression", "--data-path", "/etc/hostname"}
        << "drop --data-path";
    QTest::newRow("missing data file")
        << QStringList{"train", "--data", "digits", "--data-path", "/nonexistent/digits.csv"}
        << "cannot open";
  }
  void testBadArguments() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    Result r = run(args);
    QVERIFY2(r.code != 0, qPrintable(r.out));
    QVERIFY2((r.err + r.out).contains(expected), qPrintable(r.err + r.out));
    QVERIFY2(r.err.size() < 300, qPrintable("error message too long: " + r.err));
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
