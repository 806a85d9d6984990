#include "time_axis_widget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ddpscope::gui {

namespace {
constexpr double kWheelStep = 1.25;  // per notch
constexpr double kKeyStep = 1.5;     // per key press
constexpr int kDragSlopPx = 3;       // a press that moves less is a click
}  // namespace

TimeAxisWidget::TimeAxisWidget(int labelWidth, int rightMargin, QWidget* parent)
    : QWidget(parent), m_labelWidth(labelWidth), m_rightMargin(rightMargin) {}

int TimeAxisWidget::plotWidth() const { return std::max(1, width() - m_labelWidth - m_rightMargin); }

void TimeAxisWidget::pressAt(QPoint pos) {
  m_pressAt = m_lastDrag = pos;
  m_dragged = false;
}

void TimeAxisWidget::panWithMouse(QPoint pos) {
  if (std::abs(pos.x() - m_pressAt.x()) > kDragSlopPx) m_dragged = true;
  m_axis.pan(-(pos.x() - m_lastDrag.x()));  // drag right: earlier times come into view
  m_lastDrag = pos;
  update();
}

bool TimeAxisWidget::navigationKey(const QKeyEvent* event) {
  const double centre = m_axis.width_px / 2;
  switch (event->key()) {
    case Qt::Key_W:
    case Qt::Key_Plus:
    case Qt::Key_Equal: m_axis.zoom(kKeyStep, centre); break;
    case Qt::Key_S:
    case Qt::Key_Minus: m_axis.zoom(1 / kKeyStep, centre); break;
    case Qt::Key_A:
    case Qt::Key_Left: m_axis.pan(-m_axis.width_px / 5); break;
    case Qt::Key_D:
    case Qt::Key_Right: m_axis.pan(m_axis.width_px / 5); break;
    default: return false;
  }
  update();
  return true;
}

void TimeAxisWidget::wheelEvent(QWheelEvent* event) {
  m_axis.zoom(std::pow(kWheelStep, event->angleDelta().y() / 120.0), event->position().x() - m_labelWidth);
  update();
  event->accept();
}

void TimeAxisWidget::resizeEvent(QResizeEvent*) { m_axis.width_px = plotWidth(); }

}  // namespace ddpscope::gui
