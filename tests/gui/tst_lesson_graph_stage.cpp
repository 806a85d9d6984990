// A lesson's graph as the graph views show it: each node's marks are the state's (count,
// run, running, active), the step just taken lights the node it was about, and Predict
// mode's click is judged from the state, only while a question is asked.
#include <QtTest/QtTest>

#include "lesson_graph_stage.h"
#include "shipped_lessons.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::testing;

class TestLessonGraphStage : public QObject {
  Q_OBJECT
  Lesson m_lesson = shippedLesson("seed-fast.ddprun");

 private slots:
  void testMarksAreTheStates() {
    const size_t falls = firstStep(m_lesson, StepKind::CountFalls);
    QVERIFY(falls < m_lesson.steps.size());
    const LessonState s = m_lesson.stateAfter(falls + 1);
    const auto marks = lessonMarks(s, &m_lesson.steps[falls]);
    QCOMPARE(marks.size(), m_lesson.graph.nodes.size());
    for (size_t i = 0; i < marks.size(); ++i) {
      QCOMPARE(marks[i].counter, s.counters[i]);
      QCOMPARE(marks[i].executed, bool(s.executed[i]));
      QCOMPARE(marks[i].running, static_cast<int>(i) == s.running);
      QCOMPARE(marks[i].highlight, static_cast<int>(i) == m_lesson.steps[falls].node);
    }
    // A node that just ran is marked running, not lit.
    const size_t runs = firstStep(m_lesson, StepKind::NodeRuns);
    const auto after = lessonMarks(m_lesson.stateAfter(runs + 1), &m_lesson.steps[runs]);
    const int node = m_lesson.steps[runs].node;
    QVERIFY(after[static_cast<size_t>(node)].running && !after[static_cast<size_t>(node)].highlight);
  }

  void testAClickIsJudgedOnlyWhenAsked() {
    LessonGraphStage stage;
    stage.setLesson(m_lesson);
    const size_t at = firstStep(m_lesson, StepKind::NodeRuns);
    const int next = m_lesson.steps[at].node;
    const LessonState s = m_lesson.stateAfter(at);
    int waiting = -1;
    for (size_t n = 0; n < s.counters.size() && waiting < 0; ++n)
      if (static_cast<int>(n) != next && s.counters[n] > 0) waiting = static_cast<int>(n);
    QVERIFY(waiting >= 0);
    QList<LessonAnswer> answers;
    connect(&stage, &LessonGraphStage::answered, this, [&](const LessonAnswer& a) { answers << a; });
    stage.showState(s, at, false);
    emit stage.nodeIndexClicked(next);
    QVERIFY(answers.isEmpty());
    stage.showState(s, at, true);
    emit stage.nodeIndexClicked(waiting);
    emit stage.nodeIndexClicked(next);
    QCOMPARE(answers.size(), 2);
    QVERIFY(!answers[0].right);
    QVERIFY2(answers[0].verdict.contains("it still waits for gradients"), qPrintable(answers[0].verdict));
    QVERIFY(answers[1].right);
    QVERIFY2(answers[1].verdict.startsWith("Right: "), qPrintable(answers[1].verdict));
    QCOMPARE(LessonGraphStage::question(), QString("Which node runs next? Click it in the graph."));
  }
};

DDPSCOPE_TEST_MAIN(TestLessonGraphStage)
#include "tst_lesson_graph_stage.moc"
