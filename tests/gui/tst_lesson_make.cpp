// `ddpscope-cli lesson make`: a lesson file made from a real recording replays in the app
// with its stops halting Play and its narration in place of the step's words, and a link
// to it opens it again.
#include <QtTest/QtTest>

#include "lesson_links_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::LessonFile;
using namespace ddpscope::gui::lesson_links_fixture;

class TestLessonMake : public LessonLinksTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // A lesson file made by the CLI from a real recording: its stops halt Play, its
  // narration replaces the step's words, and a link to it opens it again.
  void testALessonFileMadeByTheCliReplaysWithItsStopsAndNarration() {
    QTemporaryDir dir;
    const QString run = dir.filePath("my job.ddprun");
    QVERIFY(QFile::copy(kLessons + "/ddp-buckets.ddprun", run));
    const Cli made = runCli({"lesson", "make", run, "--title", "Buckets, my way", "--stop", "10", "--narrate",
                             "5:The fifth step, in my words."});
    QVERIFY2(made.code == 0, qPrintable(made.out));
    const QString lesson = dir.filePath("my job.ddplesson");
    QVERIFY(QFileInfo::exists(lesson));
    // The CLI refuses what it cannot make.
    QVERIFY(runCli({"lesson", "make", run}).out.contains("--force replaces it"));
    QVERIFY(runCli({"lesson", "make", run, "--rank", "7", "--force"}).out.contains("the run has 2 ranks, 0 to 1"));
    QVERIFY(runCli({"lesson", "make", run, "--narrate", "five:x", "--force"}).out.contains("expected STEP:TEXT"));

    MainWindow window(dir.path());
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.openLessonFile(lesson));
    LearnPage* page = window.part<LearnPage>();
    QVERIFY(page->lesson().ddp);
    QCOMPARE(page->lessonBox()->currentText(), QString("Buckets, my way"));
    QCOMPARE(page->stops(), std::vector<int>{10});
    // No example to record again, no twin to show beside it.
    QVERIFY(!page->sideBySideBox()->isEnabled());
    QString refused;
    QVERIFY(!page->runLive(&refused));
    QVERIFY2(refused.contains("lesson of the Learn menu"), qPrintable(refused));
    page->player()->setStepsPerSecond(200);
    page->setPlaying(true);
    QTRY_VERIFY_WITH_TIMEOUT(!page->isPlaying(), 5000);
    QCOMPARE(page->applied(), size_t{10});  // stopped at the lesson's stop, not the end
    page->toStart();
    for (int i = 0; i < 5; ++i)
      page->stepForward();
    QCOMPARE(page->explanation()->text(), QString("The fifth step, in my words."));
    page->stepForward();
    QVERIFY(page->explanation()->text() != QString("The fifth step, in my words."));
    const QString link = window.part<LearnPage>()->copyLinkToStep();
    QVERIFY2(link.startsWith("ddpscope:learn?file="), qPrintable(link));
    MainWindow fresh(dir.path());
    QString error;
    QVERIFY2(fresh.openLink(link, &error), qPrintable(error));
    QCOMPARE(fresh.part<LearnPage>()->applied(), size_t{6});
    QCOMPARE(fresh.part<LearnPage>()->lessonBox()->currentText(), QString("Buckets, my way"));
    // A link to a lesson the receiver does not have says so and what to do.
    QFile::remove(lesson);
    QVERIFY(!fresh.openLink(link, &error));
    QVERIFY2(error.contains("not on this machine") && error.contains("ask whoever sent it"), qPrintable(error));
  }
};

DDPSCOPE_TEST_MAIN(TestLessonMake)
#include "tst_lesson_make.moc"
