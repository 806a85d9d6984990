// Lesson requests: each names what it replays, and reading one reads the lesson's run and
// its twin (the other mode's recording), or says why it cannot.
#include <QtTest/QtTest>

#include <QComboBox>
#include <QThread>

#include "learn_page.h"
#include "lesson_catalog.h"
#include "lesson_open_job.h"
#include "lesson_request.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestLessonRequest : public QObject {
  Q_OBJECT

 private slots:

  void testRequestsNameWhatTheyReplay() {
    QString error;
    const auto ring = requestMenuLesson(6, &error);
    QVERIFY2(ring, qPrintable(error));
    QCOMPARE(ring->source.source, LessonLink::Source::Builtin);
    QCOMPARE(ring->source.lesson, 6);
    QCOMPARE(ring->kind, lessonKindName(lessons()[6]));
    QVERIFY(QFileInfo::exists(ring->run));
    QVERIFY(!requestMenuLesson(99, &error));
    QVERIFY2(error.contains("no lesson 100"), qPrintable(error));
    // Lesson 2 carries its twin; a live re-recording of it keeps the twin beside it.
    const auto fast = requestMenuLesson(1, &error);
    QVERIFY(fast && !fast->compareRun.isEmpty());
    const LessonRequest live = requestLiveRecording(1, "/tmp/x.ddprun");
    QCOMPARE(live.compareRun, fast->compareRun);
    QCOMPARE(live.catalogIndex, 1);
    QCOMPARE(live.source.source, LessonLink::Source::Run);
    // A link to a file that is not here is refused before anything is read.
    LessonLink link;
    link.source = LessonLink::Source::File;
    link.path = "/nonexistent/lesson.ddplesson";
    QVERIFY(!requestLink(link, &error));
    QVERIFY2(error.contains("not on this machine"), qPrintable(error));
  }

  void testReadLessonReadsTheRunTheTwinAndSaysWhy() {
    QString error;
    const auto loaded = readLesson(*requestMenuLesson(1, &error), &error);
    QVERIFY2(loaded, qPrintable(error));
    QVERIFY(!loaded->lesson.steps.empty());
    QVERIFY(!loaded->compared.steps.empty());  // SMART beside FAST
    QVERIFY(loaded->compareError.isEmpty());
    const auto none = readLesson(requestRun("/nonexistent/run.ddprun"), &error);
    QVERIFY(!none);
    QVERIFY2(error.startsWith("Cannot open /nonexistent/run.ddprun"), qPrintable(error));
  }
};

DDPSCOPE_TEST_MAIN(TestLessonRequest)
#include "tst_lesson_request.moc"
