// SummaryPage: the open run at a glance: status, ranks and backend, per-rank iteration
// time, communication and overlap, events received and dropped, GPU time (HTA's
// definitions) and stragglers when the run has GPU work.
#pragma once

#include <QLabel>

#include "run_data.h"

namespace ddpscope::gui {

class SummaryPage : public QLabel {
  Q_OBJECT

 public:
  explicit SummaryPage(QWidget* parent = nullptr);
  void setRun(const RunData& run);
};

}  // namespace ddpscope::gui
