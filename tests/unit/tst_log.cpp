// Diagnostics through one logger whose level DDPSCOPE_LOG_LEVEL sets; a level it does
// not know is reported, never a reason for a job to fail.
#include <QtTest/QtTest>

#include "launcher_fixture.h"
#include "test_registry.h"

using namespace ddpscope::testing::launcher_fixture;

class TestLog : public LauncherTest {
  Q_OBJECT

 private slots:

  // Diagnostics go through one logger whose level DDPSCOPE_LOG_LEVEL sets; a level it
  // does not know is reported, never a reason for the job to fail.
  void testLogLevelChoosesWhatShows() {
    QTemporaryDir dir;
    const QStringList args = {"train",   "--np", "2",       "--iters", "2",
                              "--batch", "8",    "--force", "--out",   dir.filePath("log.ddprun")};
    const QString summary = "[ddpscope] collector: ";
    Result plain = run(args);
    QCOMPARE(plain.code, 0);
    QVERIFY2(plain.err.contains(summary), qPrintable(plain.err));
    Result quiet = run(args, {{"DDPSCOPE_LOG_LEVEL", "warning"}});
    QCOMPARE(quiet.code, 0);
    QVERIFY2(!quiet.err.contains("[ddpscope]"), qPrintable(quiet.err));
    Result unknown = run(args, {{"DDPSCOPE_LOG_LEVEL", "loud"}});
    QCOMPARE(unknown.code, 0);
    QVERIFY2(unknown.err.contains("[ddpscope] warning: DDPSCOPE_LOG_LEVEL='loud' is not one of") &&
                 unknown.err.contains(summary),
             qPrintable(unknown.err));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLog)
#include "tst_log.moc"
