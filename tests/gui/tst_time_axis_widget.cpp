// TimeAxisWidget, shared by the timeline and the send/recv view: the timeline zooms and
// pans as the send/recv view does, and a press that hardly moves is a click.
#include <QTest>

#include "time_axis_views.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::time_axis_views;

class TestTimeAxisWidget : public TimeAxisTest {
  Q_OBJECT

 private slots:

  void testTheTimelineZoomsAndPansTheSameWay() {
    auto view = timelineView();
    checkNavigation(view.get(), TimelineView::kLabelWidth, Qt::ShiftModifier);
  }

  // A press that moves less than a few pixels is a click, not a drag: it selects.
  void testASmallMoveIsStillAClick() {
    auto view = sequenceView();
    view->resize(800, 300);
    view->show();
    QVERIFY(QTest::qWaitForWindowExposed(view.get()));
    view->fitAll();
    const TimeAxis before = view->axis();
    const QPoint from(SequenceView::kLabelWidth + 300, 150), to(SequenceView::kLabelWidth + 302, 150);
    QTest::mousePress(view.get(), Qt::LeftButton, Qt::NoModifier, from);
    QMouseEvent move(QEvent::MouseMove, to, view->mapToGlobal(to), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(view.get(), &move);
    view->select(-1);
    QTest::mouseRelease(view.get(), Qt::LeftButton, Qt::NoModifier, to);
    QCOMPARE(view->selected(), -1);  // no arrow there, but the click was taken as one
    QVERIFY(before.begin_ns - view->axis().begin_ns <= static_cast<int64_t>(3 * before.nsPerPx()) + 1);
  }
};

DDPSCOPE_TEST_MAIN(TestTimeAxisWidget)
#include "tst_time_axis_widget.moc"
