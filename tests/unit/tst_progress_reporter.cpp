// Training progress as ddpscope-cli train shows it: plain lines when stdout is no
// terminal (logs, CI, pipes), a redrawn bar on a terminal.
#include <QtTest/QtTest>

#include "cli_fixture.h"

#include <QRegularExpression>
#include <cstdio>
#include <limits>

#include "apps/progress_reporter.h"
#include "ddpscope/error.h"
#include "test_registry.h"

using namespace ddpscope::testing::cli_fixture;

class TestProgressReporter : public CliTest {
  Q_OBJECT

 private slots:

  void testTrainShowsProgress() {
    Result r = run({"train", "--model", "mlp", "--iters", "20", "--batch", "16", "--log-every", "10"});
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

  // The reporter alone, into a file: lines at the first, every `every`-th and the last
  // iteration, a loss that turns NaN said at once, and the end in one line.
  void testLinesWhereTheyAreDue() {
    std::FILE* out = std::tmpfile();
    QCOMPARE(ddpscope::apps::progress_style("auto", out), ddpscope::apps::ProgressStyle::Lines);  // not a terminal
    {
      ddpscope::apps::ProgressReporter r(10, ddpscope::apps::ProgressStyle::Lines, 4, out);
      for (int64_t it = 1; it <= 10; ++it)
        r.update(it, it == 6 ? std::numeric_limits<double>::quiet_NaN() : 0.5, 100.0);
      r.finish(2.0);
    }
    std::rewind(out);
    QString text;
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, out))
      text += QString::fromUtf8(buffer);
    std::fclose(out);
    const QStringList iters = text.split('\n').filter(QRegularExpression("^iter "));
    QCOMPARE(iters.size(), 5);  // 1, 4, 6 (the NaN), 8, 10
    QVERIFY2(iters[0].startsWith("iter 1/10") && iters[2].startsWith("iter 6/10") && iters[4].startsWith("iter 10/10"),
             qPrintable(text));
    QVERIFY2(text.contains("done: 10 iterations in 2.00s"), qPrintable(text));
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, ddpscope::apps::progress_style("fancy"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestProgressReporter)
#include "tst_progress_reporter.moc"
