// TimelineView: the run's tracks as Nsight Systems and Perfetto draw them. A header per
// rank (click it to collapse the rank), under it one track per thread, spans in rows by
// nesting so none is drawn over another, unfinished ops drawn open to the run's end,
// instants as ticks and labelled marks, exposed communication as a red band. The ruler's
// units follow the zoom and it names the iteration in view.
//
// Mouse: the wheel zooms around the cursor; a drag selects a time range (Shift+drag or
// the middle button pans); a click selects the span or mark under it (empty space clears).
// Keys (Perfetto's): W/S zoom, A/D pan, F fits the run, N/P the next/previous iteration,
// Esc clears the selection and range; Ctrl+F and / ask the page for its search bar.
// Spans narrower than a pixel are merged per pixel column and row, so a track costs at
// most its width in rectangles per row. Flows link lanes: RPC messages from send to
// receive and each DDP allreduce from rank to rank by sequence number.
#pragma once

#include <QLineF>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "time_axis_widget.h"
#include "timeline_data.h"
#include "track_layout.h"

namespace ddpscope::gui {

class TimelineView : public TimeAxisWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);
  // The view shares the data (a run's timeline can be 1M spans: never copied).
  void setData(std::shared_ptr<const TimelineData> data);
  // The same run, grown: keeps the visible window unless it showed the whole run, in
  // which case it keeps showing the whole run (following a live job).
  void updateData(std::shared_ptr<const TimelineData> data);
  const TimelineData& data() const { return *m_data; }
  std::shared_ptr<const TimelineData> sharedData() const { return m_data; }
  const TrackLayout& layout() const { return m_layout; }
  void fitAll();
  void showIteration(int index);  // 0-based into data().iterations
  // Shows [begin_ns, end_ns] across the view's width (the Compare page keeps two views on
  // one scale).
  void showWindow(int64_t begin_ns, int64_t end_ns);
  // Shows [begin_ns, end_ns] with room around it, selected as the range, and expands
  // `rank` (-1: none): where the Hang view's grid sends a clicked collective.
  void showTimeRange(int rank, int64_t begin_ns, int64_t end_ns);
  // Selects the message flow from `fromRank` at `fromNs` to `toRank` at `toNs` (a click in
  // the send/recv view) and shows it; false when the timeline has no such flow.
  bool selectFlow(int fromRank, qint64 fromNs, int toRank, qint64 toNs);
  int selectedFlow() const { return m_selectedFlow; }  // into data().flows, -1: none
  int64_t drawnFlows() const { return m_drawnFlows; }  // by the last paint

  // Selection: one span, instant or open op. `reveal` scrolls the time axis to it and
  // expands its rank.
  void select(const SpanRef& ref, bool reveal = false);
  const SpanRef& selection() const { return m_selection; }
  // The selected time range; begin == end: none.
  void setRange(int64_t begin_ns, int64_t end_ns);
  int64_t rangeBegin() const { return m_rangeBegin; }
  int64_t rangeEnd() const { return m_rangeEnd; }
  // Expanding a rank expands its host too. A rank reads collapsed while its host is.
  void setRankCollapsed(int rank, bool collapsed);
  bool rankCollapsed(int rank) const;
  // Where each rank ran: with two hosts or more the tracks are grouped under a header per
  // host, each collapsible; a job of more than 32 ranks starts with its hosts collapsed.
  void setHosts(std::map<int, std::string> hostOfRank);
  void setHostCollapsed(const std::string& host, bool collapsed);
  bool hostCollapsed(const std::string& host) const { return m_hosts.collapsed.count(host) > 0; }
  // Where `ref` is drawn (its centre; its start for instants), for tests and tooltips;
  // (-1, -1) when it is not in view.
  QPoint pointOf(const SpanRef& ref) const;
  // What is drawn at `pos`: a mark or tick first, then the span in that row.
  SpanRef hitTest(QPoint pos) const;

  static constexpr int kLabelWidth = 170;
  static constexpr int kIterationBand = 16;  // the ruler's top strip: iterations
  static constexpr int kTop = 40;            // the ruler's height
  // Where the selected range's length is drawn (empty: no range); above the time labels.
  QRectF rangeBadgeRect() const;
  // A label on the ruler: an iteration's number in the top band, or a tick's time below it.
  struct RulerLabel {
    QRectF rect;
    QString text;
  };
  // The ruler's labels as they are painted: none overlaps another or the range's length,
  // and each lies whole over the time axis.
  std::vector<RulerLabel> rulerLabels() const;

 signals:
  // A one-line description for the status bar; empty when the selection was cleared.
  void spanClicked(const QString& description);
  void selectionChanged();
  void rangeChanged();
  void searchRequested();
  // select(..., reveal): the selected span's lane is at height `y` of the view; the page
  // scrolls it into sight (the view cannot: it does not own its scroll area).
  void revealRequested(int y);
  // New data (another run, or the same run grown): span references into the old data
  // (search matches) are stale.
  void dataReplaced();
  // The window shown changed (a zoom, a pan, a fit), announced as it is painted.
  void windowChanged(qint64 begin_ns, qint64 end_ns);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool event(QEvent* event) override;  // tooltips

 private:
  QString describe(const SpanRef& ref) const;
  void relayout();
  void paintRuler(QPainter& p);
  // Rank 0's iterations in view: where each one's band is on the ruler, and its number.
  std::vector<std::pair<QRectF, int64_t>> iterationBands() const;
  void paintLane(QPainter& p, size_t laneIndex, int top, int rows, int rowHeight);
  // paintLane()'s part for the lane's unfinished ops, drawn over its spans.
  void paintOpenSpans(QPainter& p, size_t laneIndex, int top, int rows, int rowHeight);
  // A host's or rank's header row; folded, its first lane's outermost spans beside it.
  void paintHeader(QPainter& p, const TrackRow& track, const QColor& fill, const QString& label);
  void paintInstants(QPainter& p, size_t laneIndex);
  struct VisibleFlows {
    std::vector<QLineF> messages, collectives, launches;
  };
  VisibleFlows visibleFlows() const;
  void paintCollectiveLinks(QPainter& p, const VisibleFlows& flows);
  void paintFlows(QPainter& p, const VisibleFlows& flows);
  void paintSelection(QPainter& p);
  QRectF spanRect(const SpanRef& ref) const;
  double laneCenter(uint32_t lane) const { return m_layout.anchorY(static_cast<int>(lane)); }

  std::shared_ptr<const TimelineData> m_data;
  TrackLayout m_layout;
  std::set<int> m_collapsed;
  int m_iteration = -1;
  int m_selectedFlow = -1;
  int64_t m_drawnFlows = 0;
  SpanRef m_selection;
  int64_t m_rangeBegin = 0, m_rangeEnd = 0;
  bool m_panning = false;
  std::pair<int64_t, int64_t> m_announced{0, 0};  // the window windowChanged last announced
  TrackHosts m_hosts;
};

}  // namespace ddpscope::gui
