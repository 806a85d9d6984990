// TimelineDetailLoader: a big run opens with its structure alone (iterations, phases,
// communication: what a view of the whole run draws; RunData::kDetailAtOpen). This loads
// the detail (autograd nodes, gradient ticks, copies, kernels) of the window the timeline
// shows, off the UI thread, once that window holds few enough detail spans, and gives the
// view the structure with that detail; its window, zoom and selection stay. How many
// detail spans a window holds comes from the span packs' extents, before reading any.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QTimer>
#include <memory>

#include "run_data.h"

namespace ddpscope::gui {

class TimelineView;

class TimelineDetailLoader : public QObject {
  Q_OBJECT

 public:
  // Detail spans one window may load (about 80 bytes each in memory).
  static constexpr int64_t kWindowSpans = 3'000'000;
  // Above this many structure spans, the view drops the last window's detail while the
  // next loads, so the structure is held twice at most, not three times (7.7M spans of a
  // 100M-span run: 430 MB each).
  static constexpr int64_t kStructureHeldTwice = 2'000'000;
  void setWindowSpans(int64_t spans) { m_windowSpans = spans; }

  explicit TimelineDetailLoader(TimelineView* view, QObject* parent = nullptr);
  ~TimelineDetailLoader() override;
  // The run the view shows; one that opened with all its detail needs nothing.
  void setRun(std::shared_ptr<const RunData> run);
  bool isLoading() const { return m_watcher.isRunning(); }
  // What the timeline holds of the detail, as a sentence for the page; empty when the run
  // has all of it.
  const QString& status() const { return m_status; }

  // The detail spans of `packs` that may overlap [begin_ns, end_ns] (whole packs).
  static int64_t detailSpansIn(const std::vector<probes::PackExtent>& packs, int64_t begin_ns, int64_t end_ns);

 signals:
  void statusChanged(const QString& status);
  // The view holds the detail of a new window.
  void loaded();

 private:
  void consider();
  void start(probes::TimeWindow window);
  void onFinished();
  void setStatus(const QString& status);

  TimelineView* m_view;
  std::shared_ptr<const RunData> m_run;  // null: nothing to load
  std::shared_ptr<const TimelineData> m_structure;
  int64_t m_structureSpans = 0;
  QTimer m_settle;  // a zoom or pan settles before a load starts
  QFutureWatcher<std::shared_ptr<const TimelineData>> m_watcher;
  probes::TimeWindow m_loading, m_loaded;
  bool m_hasLoaded = false;
  int64_t m_windowSpans = kWindowSpans;
  int m_generation = 0;  // setRun's count: a load for an earlier run is dropped
  int m_loadingGeneration = 0;
  QString m_status;
};

}  // namespace ddpscope::gui
