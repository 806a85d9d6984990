// SummaryPage: the open run at a glance: status, ranks and backend, per-rank iteration
// time, communication and overlap, events received and dropped, GPU time (HTA's
// definitions), idle by cause, stream queues, the longest GPU gaps (links to the
// timeline) and stragglers when the run has GPU work.
#pragma once

#include <QLabel>

#include "run_data.h"

namespace ddpscope::gui {

class SummaryPage : public QLabel {
  Q_OBJECT

 public:
  explicit SummaryPage(QWidget* parent = nullptr);
  void setRun(const RunData& run);

 signals:
  // A GPU gap's link was clicked: [begin_ns, end_ns] on `rank`, for the timeline.
  void gapClicked(int rank, qint64 begin_ns, qint64 end_ns);

 private:
  // Parts of setRun()'s text that are translated in this class's context.
  static QString cutShortHtml(const RunData& run);
  static QString rankTableHtml(const RunData& run, bool gpu);
};

}  // namespace ddpscope::gui
