// The two views that zoom and pan alike (TimeAxisWidget), set up for their tests: a
// send/recv view of 2 workers over a 1 ms run, and a timeline of the same length.
#pragma once

#include <QtTest/QtTest>

#include <QWheelEvent>
#include "sequence_view.h"
#include "timeline_view.h"

namespace ddpscope::gui::time_axis_views {

using namespace ddpscope::gui;

inline constexpr int64_t kRunNs = 1'000'000;

inline std::unique_ptr<SequenceView> sequenceView() {
  auto view = std::make_unique<SequenceView>();
  auto data = std::make_shared<SequenceData>();
  data->workers = 2;
  data->begin_ns = 0;
  data->end_ns = kRunNs;
  view->setData(data);
  return view;
}

inline std::unique_ptr<TimelineView> timelineView() {
  auto view = std::make_unique<TimelineView>();
  auto data = std::make_shared<TimelineData>();
  data->begin_ns = 0;
  data->end_ns = kRunNs;
  view->setData(data);
  return view;
}

inline int64_t shownNs(const TimeAxis& a) { return a.end_ns - a.begin_ns; }

inline void wheel(QWidget* view, QPoint at, int notches) {
  QWheelEvent event(at, view->mapToGlobal(at), QPoint(), QPoint(0, 120 * notches), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(view, &event);
}

// The checks both views must pass; `labelWidth` is the view's label column.
template <typename View>
inline void checkNavigation(View* view, int labelWidth, Qt::KeyboardModifiers dragModifiers) {
  view->resize(800, 300);
  view->show();
  QVERIFY(QTest::qWaitForWindowExposed(view));
  view->fitAll();
  const TimeAxis fitted = view->axis();
  QVERIFY(fitted.begin_ns <= 0 && fitted.end_ns >= kRunNs);

  // W zooms in about the middle: the time at the middle stays where it was.
  const int64_t middle = fitted.toNs(fitted.width_px / 2);
  QTest::keyClick(view, Qt::Key_W);
  QVERIFY2(shownNs(view->axis()) < shownNs(fitted) * 7 / 10, "W zooms in by 1.5");
  QVERIFY(std::abs(view->axis().toNs(view->axis().width_px / 2) - middle) <=
          static_cast<int64_t>(view->axis().nsPerPx()) + 1);
  QTest::keyClick(view, Qt::Key_S);
  QVERIFY(std::abs(shownNs(view->axis()) - shownNs(fitted)) <= shownNs(fitted) / 100);

  // D pans right by a fifth of the width, A back.
  QTest::keyClick(view, Qt::Key_W);
  const TimeAxis zoomed = view->axis();
  QTest::keyClick(view, Qt::Key_D);
  const double fifthNs = zoomed.width_px / 5 * zoomed.nsPerPx();
  QVERIFY(std::abs(static_cast<double>(view->axis().begin_ns - zoomed.begin_ns) - fifthNs) <= zoomed.nsPerPx() + 1);
  QTest::keyClick(view, Qt::Key_A);
  QVERIFY(std::abs(view->axis().begin_ns - zoomed.begin_ns) <= static_cast<int64_t>(zoomed.nsPerPx()) + 1);

  // The wheel zooms about the cursor: the time under it stays under it.
  const QPoint at(labelWidth + 100, 150);
  const int64_t under = view->axis().toNs(100);
  wheel(view, at, 2);
  QVERIFY(shownNs(view->axis()) < shownNs(zoomed));
  QVERIFY(std::abs(view->axis().toNs(100) - under) <= static_cast<int64_t>(view->axis().nsPerPx()) + 1);

  // A drag to the right brings earlier times into view, by the pixels dragged.
  const TimeAxis beforeDrag = view->axis();
  const QPoint from(labelWidth + 300, 150), to(labelWidth + 360, 150);
  const Qt::MouseButton button = Qt::LeftButton;
  QTest::mousePress(view, button, dragModifiers, from);
  QMouseEvent move(QEvent::MouseMove, to, view->mapToGlobal(to), Qt::NoButton, button, dragModifiers);
  QApplication::sendEvent(view, &move);
  QTest::mouseRelease(view, button, dragModifiers, to);
  const double draggedNs = 60 * beforeDrag.nsPerPx();
  QVERIFY2(std::abs(static_cast<double>(beforeDrag.begin_ns - view->axis().begin_ns) - draggedNs) <=
               beforeDrag.nsPerPx() + 1,
           qPrintable(
               QString("moved %1 ns, dragged %2 ns").arg(beforeDrag.begin_ns - view->axis().begin_ns).arg(draggedNs)));

  // A resize keeps the window shown; only the scale follows.
  const TimeAxis beforeResize = view->axis();
  view->resize(1000, 300);
  QCoreApplication::processEvents();
  QCOMPARE(view->axis().begin_ns, beforeResize.begin_ns);
  QCOMPARE(view->axis().end_ns, beforeResize.end_ns);
  QVERIFY(view->axis().width_px > beforeResize.width_px + 150);
}

// What the tests of this fixture share.
class TimeAxisTest : public QObject {
 protected:
};

}  // namespace ddpscope::gui::time_axis_views
