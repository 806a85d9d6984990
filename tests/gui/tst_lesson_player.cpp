// LessonPlayer (lesson_player.h): where a replay stands, without widgets. Predict mode
// stops before each step the kind asks about; a question counts once; Play halts at a
// lesson file's stops and starts again from step 0 at the end; a link's step asks nothing.
#include <QtTest/QtTest>

#include <functional>

#include "lesson_kind.h"
#include "lesson_player.h"
#include "lesson_request.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestLessonPlayer : public QObject {
  Q_OBJECT

  Lesson m_lesson;  // lesson 1: distributed backward, FAST mode

  // The index of the first step at or after `from` that Predict mode asks about.
  size_t nextAsked(size_t from) const {
    while (from < m_lesson.steps.size() && !kindOf(m_lesson).asksBefore(m_lesson.steps[from]))
      ++from;
    return from;
  }

 private slots:
  void initTestCase() {
    QString error;
    const auto loaded = readLesson(*requestMenuLesson(0, &error), &error);
    QVERIFY2(loaded, qPrintable(error));
    m_lesson = loaded->lesson;
    QVERIFY(m_lesson.steps.size() > 20);
  }

  void testStepsMoveWithinTheLesson() {
    LessonPlayer player;
    QSignalSpy changed(&player, &LessonPlayer::changed);
    player.stepForward();  // no lesson yet: nothing to take
    QCOMPARE(player.applied(), size_t{0});
    player.setLesson(m_lesson, {});
    player.stepForward();
    player.stepForward();
    QCOMPARE(player.applied(), size_t{2});
    player.stepBack();
    QCOMPARE(player.applied(), size_t{1});
    player.toEnd();
    QCOMPARE(player.applied(), m_lesson.steps.size());
    player.stepForward();
    QCOMPARE(player.applied(), m_lesson.steps.size());
    player.jumpTo(100000);
    QCOMPARE(player.applied(), m_lesson.steps.size());
    player.setPlaying(true);  // at the end: plays again from the start
    QCOMPARE(player.applied(), size_t{0});
    QVERIFY(player.isPlaying());
    player.toStart();
    QVERIFY(!player.isPlaying());
    QCOMPARE(changed.count(), 8);  // every move shows, Play from the end included
  }

  void testAQuestionCountsOnce() {
    LessonPlayer player;
    player.setLesson(m_lesson, {});
    QSignalSpy answered(&player, &LessonPlayer::answered);
    QSignalSpy judged(&player, &LessonPlayer::judged);
    const size_t asked = nextAsked(0);
    QVERIFY(asked < m_lesson.steps.size());
    player.setPredicting(true);
    for (size_t i = 0; i <= asked; ++i)
      player.stepForward();
    QVERIFY(player.isAsking());
    QCOMPARE(player.applied(), asked);
    player.stepForward();  // answer first
    QCOMPARE(player.applied(), asked);
    player.answer("wrong node", false, "Not that one");
    QVERIFY(player.isAsking());
    QCOMPARE(player.predictions(), 1);
    QCOMPARE(player.score(), 0);
    player.answer("right node", true, "Right");
    QVERIFY(!player.isAsking());
    QCOMPARE(player.applied(), asked + 1);
    QCOMPARE(player.predictions(), 1);  // the second answer to the same question: not counted
    QCOMPARE(answered.count(), 1);
    QCOMPARE(judged.last().at(0).toString(), QString("Yes, that one."));
    // The next question answered right at once scores.
    const size_t next = nextAsked(asked + 1);
    if (next < m_lesson.steps.size()) {
      while (!player.isAsking())
        player.stepForward();
      player.answer("right node", true, "Right: it runs next");
      QCOMPARE(player.score(), 1);
      QCOMPARE(player.predictions(), 2);
      QCOMPARE(judged.last().at(0).toString(), QString("Right: it runs next"));
    }
    // Leaving Predict mode drops the question.
    while (!player.isAsking() && player.applied() < m_lesson.steps.size())
      player.stepForward();
    player.setPredicting(false);
    QVERIFY(!player.isAsking());
  }

  // A wrong answer's red words do not outlive the question (issue 68: they stayed after the
  // teacher's Reveal and after Predict was turned off): leaving Predict mode, a jump (a
  // class's step), the start and the end each clear them.
  void testAWrongAnswerIsForgottenWithItsQuestion() {
    const size_t asked = nextAsked(0);
    QVERIFY(asked < m_lesson.steps.size());
    const std::vector<std::function<void(LessonPlayer&)>> leaves = {
        [](LessonPlayer& p) { p.setPredicting(false); }, [&](LessonPlayer& p) { p.jumpTo(asked + 1); },
        [](LessonPlayer& p) { p.toStart(); }, [](LessonPlayer& p) { p.toEnd(); }};
    for (size_t way = 0; way < leaves.size(); ++way) {
      LessonPlayer player;
      player.setLesson(m_lesson, {});
      QSignalSpy judged(&player, &LessonPlayer::judged);
      player.setPredicting(true);
      while (!player.isAsking())
        player.stepForward();
      player.answer("wrong node", false, "Not that one. Try again.");
      QCOMPARE(judged.last().at(0).toString(), QString("Not that one. Try again."));
      leaves[way](player);
      QVERIFY2(judged.last().at(0).toString().isEmpty() && judged.last().at(1).toBool(),
               qPrintable(QString("way %1: %2").arg(way).arg(judged.last().at(0).toString())));
    }
  }

  void testPlayHaltsAtAStop() {
    LessonPlayer player;
    player.setLesson(m_lesson, {3});
    QSignalSpy stopped(&player, &LessonPlayer::stopReached);
    player.setStepsPerSecond(200);
    player.setPlaying(true);
    QTRY_COMPARE_WITH_TIMEOUT(stopped.count(), 1, 5000);
    QCOMPARE(stopped.front().front().toInt(), 3);
    QCOMPARE(player.applied(), size_t{3});
    QVERIFY(!player.isPlaying());
    player.setPlaying(true);  // Space plays on to the end
    QTRY_VERIFY_WITH_TIMEOUT(!player.isPlaying(), 10000);
    QCOMPARE(player.applied(), m_lesson.steps.size());
  }
};

DDPSCOPE_TEST_MAIN(TestLessonPlayer)
#include "tst_lesson_player.moc"
