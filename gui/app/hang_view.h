// HangView: where each rank stands, from its latest probe events (the hang analysis):
// the collective it is blocked in (op, sequence number, for how long), the buckets still
// waiting for gradients or for their allreduce, and the gradients that have not arrived.
// Shown live when a job stops making progress, and for a finished or failed run.
#pragma once

#include <QWidget>

#include "hang_analysis.h"

class QLabel;
class QTableWidget;

namespace ddpscope::gui {

class HangView : public QWidget {
  Q_OBJECT

 public:
  explicit HangView(QWidget* parent = nullptr);

  // headline: what the app knows (e.g. "no progress for 12 s", "the run failed: ...").
  void setReport(const probes::HangReport& report, const QString& headline, bool alarm);
  QTableWidget* table() const { return m_table; }
  QString headline() const;
  QString findings() const;

 private:
  QLabel* m_headline;
  QLabel* m_findings;
  QTableWidget* m_table;
};

}  // namespace ddpscope::gui
