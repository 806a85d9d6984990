// The send/recv view over a 1 ms run of 2 workers: the wheel zooms about the pointer, a
// drag and the keys pan, a resize keeps the window, as the timeline does.
#include <QTest>

#include "time_axis_views.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::time_axis_views;

class TestSequenceView : public TimeAxisTest {
  Q_OBJECT

 private slots:

  void testTheSendRecvViewZoomsAndPans() {
    auto view = sequenceView();
    checkNavigation(view.get(), SequenceView::kLabelWidth, Qt::NoModifier);
  }
};

DDPSCOPE_TEST_MAIN(TestSequenceView)
#include "tst_sequence_view.moc"
