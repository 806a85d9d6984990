// The ring lesson's view: its title names the allreduce and the ranks, its panel tallies
// what each rank has sent against the tensor, its question names the rank that sends
// next, and it judges a click on a cell only while a question is asked.
#include <QtTest/QtTest>

#include <QLabel>

#include "ring_lesson_view.h"
#include "ring_view.h"
#include "shipped_lessons.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::testing;

class TestRingLessonView : public QObject {
  Q_OBJECT
  Lesson m_lesson = shippedLesson("ring-allreduce.ddprun");

  static QString panelText(RingLessonView& view) {
    QStringList all;
    for (QLabel* l : view.panel()->findChildren<QLabel*>())
      all << l->text();
    return all.join('\n');
  }

 private slots:
  void testTitleAndTallyFollowTheSteps() {
    RingLessonView view;
    view.setLesson(m_lesson);
    QVERIFY2(view.title(m_lesson).contains("a ring of 4 ranks"), qPrintable(view.title(m_lesson)));
    view.showState(m_lesson.stateAfter(0), 0, false);
    QVERIFY2(panelText(view).contains("rank 0: sent 0 steps, 0 B"), qPrintable(panelText(view)));
    QVERIFY2(panelText(view).contains("1.50 times the tensor"), qPrintable(panelText(view)));
    const size_t end = m_lesson.steps.size();
    view.showState(m_lesson.stateAfter(end), end, false);
    // 2(n-1) = 6 steps of a quarter of the tensor each: 1.5 tensors.
    const QString tensor = QString::number(m_lesson.ring_tensor_bytes * 3 / 2);
    QVERIFY2(panelText(view).contains(QString("rank 3: sent 6 steps, %1 B").arg(tensor)), qPrintable(panelText(view)));
  }

  void testTheQuestionAndTheVerdict() {
    RingLessonView view;
    view.setLesson(m_lesson);
    const size_t at = firstStep(m_lesson, StepKind::RingSend);
    QVERIFY(at < m_lesson.steps.size());
    const LessonStep& next = m_lesson.steps[at];
    QVERIFY2(view.question(next).contains(QString("rank %1 send next").arg(next.rank)),
             qPrintable(view.question(next)));
    QList<LessonAnswer> answers;
    connect(&view, &LessonView::answered, this, [&](const LessonAnswer& a) { answers << a; });
    view.showState(m_lesson.stateAfter(at), at, false);
    emit view.ringView()->cellClicked(next.rank, next.param);
    QVERIFY(answers.isEmpty());  // nothing asked: a click is no answer
    view.showState(m_lesson.stateAfter(at), at, true);
    const int n = m_lesson.ring_ranks;
    emit view.ringView()->cellClicked(next.rank, (next.param + 1) % n);
    emit view.ringView()->cellClicked((next.rank + 1) % n, next.param);
    emit view.ringView()->cellClicked(next.rank, next.param);
    QCOMPARE(answers.size(), 3);
    QVERIFY(!answers[0].right && answers[0].verdict.contains("in its first step a rank sends the block with its own"));
    QVERIFY(!answers[1].right && answers[1].verdict.contains(QString("about rank %1's row").arg(next.rank)));
    QVERIFY(answers[2].right);
    QCOMPARE(answers[2].choice, QString("rank %1, block %2").arg(next.rank).arg(next.param));
  }
};

DDPSCOPE_TEST_MAIN(TestRingLessonView)
#include "tst_ring_lesson_view.moc"
