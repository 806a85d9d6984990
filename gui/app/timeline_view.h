// TimelineView: one lane per (rank, thread), spans coloured by kind, bucket allreduces
// labelled with their bucket, instants as ticks, exposed communication as a red band. Wheel zooms
// around the cursor, a drag pans, F fits the whole run, N/P jump to the next/previous iteration, a
// click reports the span under the cursor. Spans narrower than a pixel are merged per pixel column,
// so a lane costs at most its width in rectangles. Flows link lanes: each RPC message from its send
// to its receive, and each DDP allreduce from rank to rank by its sequence number (a late rank's
// link slants); at most one per pixel column and pair of lanes is drawn.
#pragma once

#include <QWidget>
#include <memory>

#include "time_axis.h"
#include "timeline_data.h"

namespace ddpscope::gui {

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);
  // The view shares the data (a run's timeline can be 1M spans: never copied).
  void setData(std::shared_ptr<const TimelineData> data);
  // The same run, grown: keeps the visible window unless it showed the whole run, in
  // which case it keeps showing the whole run (following a live job).
  void updateData(std::shared_ptr<const TimelineData> data);
  const TimelineData& data() const { return *m_data; }
  const TimeAxis& axis() const { return m_axis; }
  void fitAll();
  void showIteration(int index);  // 0-based into data().iterations
  // Selects the message flow from `fromRank` at `fromNs` to `toRank` at `toNs` (a click in
  // the send/recv view) and shows it; false when the timeline has no such flow.
  bool selectFlow(int fromRank, qint64 fromNs, int toRank, qint64 toNs);
  int selectedFlow() const { return m_selectedFlow; }  // into data().flows, -1: none
  int64_t drawnFlows() const { return m_drawnFlows; }  // by the last paint

  static constexpr int kLabelWidth = 170;
  static constexpr int kLaneHeight = 26;
  static constexpr int kTop = 22;  // the time ruler

 signals:
  void spanClicked(const QString& description);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  QString describe(const TimelineSpan& span, const TimelineLane& lane) const;
  void paintFlows(QPainter& p);
  double laneCenter(uint32_t lane) const { return kTop + lane * kLaneHeight + kLaneHeight / 2.0; }

  std::shared_ptr<const TimelineData> m_data;
  TimeAxis m_axis;
  int m_iteration = -1;
  int m_selectedFlow = -1;
  int64_t m_drawnFlows = 0;
  QPoint m_pressAt;
  QPoint m_lastDrag;
  bool m_dragged = false;
};

}  // namespace ddpscope::gui
