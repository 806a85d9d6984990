// The ring lesson's picture: a cell per rank and block inside the widget, a click on one
// says which, and the colours tell the sums apart: a block that sums every rank is green
// at the end, a rank's own values alone are not.
#include <QtTest/QtTest>

#include "ring_view.h"
#include "shipped_lessons.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::testing;

namespace {

// The colour in the middle of a cell as drawn.
QColor cellColour(RingView& view, int rank, int block) {
  const QImage image = view.grab().toImage();
  const QPoint at = view.cellRect(rank, block).center() * view.devicePixelRatioF();
  return image.pixelColor(at);
}

}  // namespace

class TestRingView : public QObject {
  Q_OBJECT
  Lesson m_lesson = shippedLesson("ring-allreduce.ddprun");

 private slots:
  void testEveryCellIsInsideAndOutOfRangeIsEmpty() {
    RingView view;
    view.resize(480, 320);
    view.setState(m_lesson.stateAfter(0), m_lesson.ring_ranks, nullptr);
    const int n = m_lesson.ring_ranks;
    QCOMPARE(n, 4);
    for (int r = 0; r < n; ++r)
      for (int b = 0; b < n; ++b) {
        const QRect cell = view.cellRect(r, b);
        QVERIFY2(!cell.isEmpty() && view.rect().contains(cell), qPrintable(QString("rank %1 block %2").arg(r).arg(b)));
      }
    QVERIFY(view.cellRect(n, 0).isEmpty());
    QVERIFY(view.cellRect(0, -1).isEmpty());
  }

  void testAClickSaysWhichCell() {
    RingView view;
    view.resize(480, 320);
    view.setState(m_lesson.stateAfter(0), m_lesson.ring_ranks, nullptr);
    view.show();
    QSignalSpy clicked(&view, &RingView::cellClicked);
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier, view.cellRect(2, 3).center());
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.at(0).at(0).toInt(), 2);
    QCOMPARE(clicked.at(0).at(1).toInt(), 3);
  }

  void testWholeSumsAreGreenOwnValuesAreNot() {
    RingView view;
    view.resize(480, 320);
    view.setState(m_lesson.stateAfter(0), m_lesson.ring_ranks, nullptr);
    const QColor own = cellColour(view, 1, 1);
    QVERIFY2(own.green() <= own.blue(), qPrintable(own.name()));  // the blue of one rank's values
    const size_t end = m_lesson.steps.size();
    view.setState(m_lesson.stateAfter(end), m_lesson.ring_ranks, &m_lesson.steps[end - 1]);
    for (int r = 0; r < m_lesson.ring_ranks; ++r) {
      const QColor whole = cellColour(view, r, (r + 2) % m_lesson.ring_ranks);
      QVERIFY2(whole.green() > whole.red() && whole.green() > whole.blue(), qPrintable(whole.name()));
    }
  }
};

DDPSCOPE_TEST_MAIN(TestRingView)
#include "tst_ring_view.moc"
