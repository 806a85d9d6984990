// SequenceView: the send/recv view, a sequence diagram of a run's RPC messages. Each
// worker is a horizontal lifeline, time runs left to right on the run's common clock,
// and each message is an arrow from its send to its receive, coloured by kind. A message
// never received is dashed to the right edge. Hovering shows an arrow's function,
// message id and bytes; a click selects it. Zoom and pan as in the timeline
// (TimeAxisWidget), and F fits the whole run.
// Level of detail: when many arrows would land on one pixel column, only one per (column,
// sender, receiver, kind) is drawn, so a frame costs at most about the view's width
// times the worker pairs, however many messages the run has.
#pragma once

#include <memory>

#include "sequence_data.h"
#include "time_axis_widget.h"

class QPainter;

namespace ddpscope::gui {

class SequenceView : public TimeAxisWidget {
  Q_OBJECT

 public:
  explicit SequenceView(QWidget* parent = nullptr);
  // The colour an arrow of `kind` is drawn in (the Messages tab's legend uses it too).
  static QColor colorOf(ArrowKind kind);
  void setData(std::shared_ptr<const SequenceData> data);
  // The same run, grown: keeps the window unless it showed the whole run.
  void updateData(std::shared_ptr<const SequenceData> data);
  const SequenceData& data() const { return *m_data; }
  void setFilter(const SequenceFilter& filter);
  const SequenceFilter& filter() const { return m_filter; }
  void fitAll();
  // Where a message not yet received ends: at this time (a lesson's current step), or at
  // the right edge when negative (the default: in flight when the run was read).
  void setNow(int64_t now_ns) {
    m_now = now_ns;
    update();
  }

  // The arrow nearest to `pos` within a few pixels among those shown, or -1.
  int arrowAt(QPointF pos) const;
  int selected() const { return m_selected; }
  void select(int arrow);  // -1: none
  // Arrows drawn by the last paint (after the level-of-detail merge): for tests and benches.
  int64_t drawnArrows() const { return m_drawn; }
  int laneY(int worker) const;

  static constexpr int kLabelWidth = 90;
  static constexpr int kTop = 22;

 signals:
  // The selected message, both ends: for the timeline and the status line.
  void arrowSelected(const QString& description, int src, qint64 sendNs, int dst, qint64 recvNs);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool event(QEvent* e) override;  // tooltips

 private:
  // The arrow's ends in widget coordinates (an unreceived one ends at the right edge).
  QLineF lineOf(const SequenceArrow& a) const;
  void paintLanes(QPainter& p);
  void paintArrows(QPainter& p);

  std::shared_ptr<const SequenceData> m_data;
  SequenceFilter m_filter;
  int m_selected = -1;
  int64_t m_drawn = 0;
  int64_t m_now = -1;
};

}  // namespace ddpscope::gui
