// The Learn page's transport bar: its buttons step, jump and play the lesson's player and
// say whether it plays, "Copy link" asks for a link, and no button takes the keyboard
// focus (the page's keys keep working).
#include <QtTest/QtTest>

#include <QPushButton>
#include <QSlider>

#include "lesson_player.h"
#include "lesson_transport.h"
#include "shipped_lessons.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::testing;

class TestLessonTransport : public QObject {
  Q_OBJECT
  Lesson m_lesson = shippedLesson("ring-allreduce.ddprun");

  static QPushButton* button(LessonTransport& bar, const QString& text) {
    for (QPushButton* b : bar.findChildren<QPushButton*>())
      if (b->text() == text) return b;
    return nullptr;
  }

 private slots:
  void testTheButtonsDriveThePlayer() {
    LessonPlayer player;
    player.setLesson(m_lesson, {});
    LessonTransport bar(&player);
    for (const char* text : {">", "<", "|<", ">|", "Play", "Copy link"})
      QVERIFY2(button(bar, text), text);
    button(bar, ">")->click();
    button(bar, ">")->click();
    QCOMPARE(player.applied(), size_t{2});
    button(bar, "<")->click();
    QCOMPARE(player.applied(), size_t{1});
    button(bar, ">|")->click();
    QCOMPARE(player.applied(), m_lesson.steps.size());
    button(bar, "|<")->click();
    QCOMPARE(player.applied(), size_t{0});
    button(bar, "Play")->click();
    QVERIFY(player.isPlaying());
    QVERIFY(button(bar, "Pause"));
    button(bar, "Pause")->click();
    QVERIFY(!player.isPlaying());
    QVERIFY(button(bar, "Play"));
    QSignalSpy copy(&bar, &LessonTransport::copyLinkClicked);
    button(bar, "Copy link")->click();
    QCOMPARE(copy.count(), 1);
  }

  void testNothingTakesTheFocus() {
    LessonPlayer player;
    LessonTransport bar(&player);
    for (QWidget* w : bar.findChildren<QWidget*>()) {
      if (qobject_cast<QPushButton*>(w) || qobject_cast<QSlider*>(w))
        QVERIFY2(w->focusPolicy() == Qt::NoFocus, qPrintable(w->objectName() + " " + w->metaObject()->className()));
    }
  }
};

DDPSCOPE_TEST_MAIN(TestLessonTransport)
#include "tst_lesson_transport.moc"
