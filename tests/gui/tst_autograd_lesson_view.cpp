// The distributed-autograd lessons' view: its panel lists the messages in flight and the
// gradients in the context as the steps go, its title names the context and the pass, and
// its mode option is the lesson's and reaches Run live.
#include <QtTest/QtTest>

#include <QComboBox>
#include <QListWidget>

#include "autograd_lesson_view.h"
#include "lesson_catalog.h"
#include "shipped_lessons.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::testing;

namespace {

QStringList items(const QListWidget* list) {
  QStringList out;
  for (int i = 0; i < list->count(); ++i)
    out << list->item(i)->text();
  return out;
}

}  // namespace

class TestAutogradLessonView : public QObject {
  Q_OBJECT
  Lesson m_lesson = shippedLesson("seed-fast.ddprun");

 private slots:
  void testThePanelFollowsTheMessages() {
    AutogradLessonView view;
    view.setLesson(m_lesson);
    QVERIFY2(view.title(m_lesson).startsWith("context ") && view.title(m_lesson).contains(" · pass "),
             qPrintable(view.title(m_lesson)));
    view.showState(m_lesson.stateAfter(0), 0, false);
    QCOMPARE(view.inFlightList()->count(), 0);
    const size_t sent = firstStep(m_lesson, StepKind::MessageSent);
    QVERIFY(sent < m_lesson.steps.size());
    const LessonState s = m_lesson.stateAfter(sent + 1);
    view.showState(s, sent + 1, false);
    QCOMPARE(view.inFlightList()->count(), static_cast<int>(s.in_flight.size()));
    const LessonStep& m = m_lesson.steps[sent];
    QVERIFY2(
        items(view.inFlightList()).join('\n').contains(QString("from worker %1 to worker %2").arg(m.rank).arg(m.peer)),
        qPrintable(items(view.inFlightList()).join('\n')));
    // At the end nothing is in flight, and every worker released the context.
    const size_t end = m_lesson.steps.size();
    view.showState(m_lesson.stateAfter(end), end, false);
    QCOMPARE(view.inFlightList()->count(), 0);
    QCOMPARE(items(view.gradientList()).filter("context released").size(), 2);
  }

  void testTheModeIsTheLessonsAndReachesRunLive() {
    AutogradLessonView view;
    LessonInfo smart;
    smart.mode = "smart";
    view.setOptions(smart);
    LiveParameters p;
    view.readOptions(p);
    QCOMPARE(p.mode, QString("smart"));
    LessonInfo none;  // a lesson without a mode keeps the one chosen
    view.setOptions(none);
    view.readOptions(p);
    QCOMPARE(p.mode, QString("smart"));
    QCOMPARE(view.modeBox()->currentText(), QString("smart"));
  }
};

DDPSCOPE_TEST_MAIN(TestAutogradLessonView)
#include "tst_autograd_lesson_view.moc"
