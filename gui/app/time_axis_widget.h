// TimeAxisWidget: what the timeline and the send/recv view share as views of time. Left
// of the plot is a column of labels; the plot maps the run's clock onto its width
// through a TimeAxis. Wheel zooms around the cursor, a drag pans, and the keys W/S (+/-)
// zoom and A/D (arrows) pan by a fifth of the width, so both views answer the same hands.
#pragma once

#include <QPoint>
#include <QWidget>

#include "time_axis.h"

class QKeyEvent;
class QMouseEvent;

namespace ddpscope::gui {

class TimeAxisWidget : public QWidget {
 public:
  const TimeAxis& axis() const { return m_axis; }

 protected:
  // `labelWidth`: the label column; `rightMargin`: room kept right of the plot.
  TimeAxisWidget(int labelWidth, int rightMargin, QWidget* parent);

  // The plot's width in pixels, never below one.
  int plotWidth() const;
  // Starts a press: where it began, not yet a drag.
  void pressAt(QPoint pos);
  // Pans by the mouse's move since the last call and marks the press as a drag once it
  // has gone a few pixels.
  void panWithMouse(QPoint pos);
  // A zoom or pan key: applied and true; any other key: false.
  bool navigationKey(const QKeyEvent* event);

  void wheelEvent(QWheelEvent* event) override;
  // Keeps the window shown; only the scale follows the new width.
  void resizeEvent(QResizeEvent* event) override;

  TimeAxis m_axis;
  QPoint m_pressAt;
  QPoint m_lastDrag;
  bool m_dragged = false;

 private:
  int m_labelWidth;
  int m_rightMargin;
};

}  // namespace ddpscope::gui
