// Lessons read off the UI thread (lesson_request.h, lesson_open_job.h): what the user
// picks in the app (the lesson box, the Learn menu, a class's step, Run live's end) is
// read on a pool thread and shown when the read ends; the lesson asked for last is the
// one shown; a class's step inside the lesson shown needs no read at all.
#include <QtTest/QtTest>

#include <QComboBox>
#include <QThread>

#include "learn_page.h"
#include "lesson_catalog.h"
#include "lesson_open_job.h"
#include "lesson_request.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestLessonOpenJob : public QObject {
  Q_OBJECT

 private slots:

  // The read runs on a pool thread; the result comes back through the event loop.
  void testTheJobReadsOnAnotherThread() {
    LessonOpenJob job;
    QSignalSpy opened(&job, &LessonOpenJob::opened);
    QString error;
    job.open(*requestMenuLesson(0, &error));
    QVERIFY(job.isBusy());
    QCOMPARE(opened.count(), 0);  // nothing read on the caller's thread
    QVERIFY(opened.wait(20000));
    QVERIFY(!job.isBusy());
    const auto lesson = opened.front().front().value<std::shared_ptr<const LoadedLesson>>();
    QVERIFY(lesson && !lesson->lesson.steps.empty());
  }

  // The lesson box and the menu: the page keeps the lesson shown until the new one is
  // read, and the newest pick wins (one lesson shown, not two).
  void testThePageShowsTheNewestPickWhenItIsRead() {
    LearnPage page(QDir::tempPath(), QString());
    QString error;
    QVERIFY2(page.openLesson(0, &error), qPrintable(error));
    const size_t before = page.lesson().steps.size();
    QSignalSpy loaded(&page, &LearnPage::lessonLoaded);
    QSignalSpy status(&page, &LearnPage::statusMessage);
    page.openLessonInBackground(3);                // DDP's buckets
    page.openLessonInBackground(6);                // then the ring, before the first read ends
    QCOMPARE(page.lesson().steps.size(), before);  // still lesson 1 on screen
    QCOMPARE(loaded.count(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 20000);
    QCOMPARE(page.lessonBox()->currentIndex(), 6);
    QCOMPARE(page.lesson().ring_ranks > 0, true);
    QTest::qWait(300);
    QCOMPARE(loaded.count(), 1);  // lesson 4's read ended unseen
    // The status bar's last word is that it opened, not "Loading ..." (which stayed).
    QVERIFY(!status.isEmpty());
    QVERIFY2(status.last().front().toString().startsWith("Opened The ring allreduce"),
             qPrintable(status.last().front().toString()));
    // A pick that cannot be read is said, and the lesson shown stays.
    QSignalSpy said(&page, &LearnPage::statusMessage);
    page.openLessonInBackground(42);
    QVERIFY(page.lesson().ring_ranks > 0);
    bool told = false;
    for (const auto& args : said)
      told |= args.front().toString().contains("no lesson 43");
    QVERIFY(told);
  }

  // A lesson opened in place (the command line, a script) wins over one still being read.
  void testALessonOpenedInPlaceWinsOverOneBeingRead() {
    LearnPage page(QDir::tempPath(), QString());
    QSignalSpy loaded(&page, &LearnPage::lessonLoaded);
    page.openLessonInBackground(3);
    QString error;
    QVERIFY2(page.openLesson(6, &error), qPrintable(error));
    QTest::qWait(1500);
    QCOMPARE(loaded.count(), 1);
    QVERIFY(page.lesson().ring_ranks > 0);
    QCOMPARE(page.lessonBox()->currentIndex(), 6);
  }

  // A class's step in the lesson shown is shown at once; another lesson's is shown when
  // its read ends (linkShown), and a link to a missing file is refused (linkFailed).
  void testFollowingAClassReadsOnlyANewLesson() {
    LearnPage page(QDir::tempPath(), QString());
    QString error;
    QVERIFY2(page.openLesson(0, &error), qPrintable(error));
    QSignalSpy loaded(&page, &LearnPage::lessonLoaded);
    QSignalSpy shown(&page, &LearnPage::linkShown);
    QSignalSpy failed(&page, &LearnPage::linkFailed);
    LessonLink link;
    link.lesson = 0;
    link.step = 5;
    page.followLink(link);
    QCOMPARE(shown.count(), 1);
    QCOMPARE(page.applied(), size_t{5});
    QCOMPARE(loaded.count(), 0);  // no read for a step of the lesson shown
    link.lesson = 6;
    link.step = 3;
    page.followLink(link);
    QCOMPARE(shown.count(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 20000);
    QCOMPARE(loaded.count(), 1);
    QVERIFY(page.lesson().ring_ranks > 0);
    QCOMPARE(page.applied(), size_t{3});
    link.source = LessonLink::Source::Run;
    link.path = "/nonexistent/run.ddprun";
    page.followLink(link);
    QCOMPARE(failed.count(), 1);
    QVERIFY2(failed.front().front().toString().contains("not on this machine"),
             qPrintable(failed.front().front().toString()));
  }
};

DDPSCOPE_TEST_MAIN(TestLessonOpenJob)
#include "tst_lesson_open_job.moc"
