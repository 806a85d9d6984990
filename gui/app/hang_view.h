// HangView: who stalled the job and where each rank stands. First the verdict and the
// flight recorder's grid of the collectives around the first mismatch (ranks x sequence
// numbers, each cell coloured by its state; a click opens the timeline there); then, from
// the latest probe events, the collective each rank is blocked in, the buckets still
// waiting for gradients or for their allreduce, and the gradients that have not arrived.
// Shown live when a job stops making progress, and for a finished or failed run.
#pragma once

#include <QWidget>

#include "hang_analysis.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace ddpscope::gui {

class HangView : public QWidget {
  Q_OBJECT

 public:
  explicit HangView(QWidget* parent = nullptr);

  // headline: what the app knows (e.g. "no progress for 12 s", "the run failed: ...").
  void setReport(const probes::HangReport& report, const QString& headline, bool alarm);
  QTableWidget* table() const { return m_table; }
  QTableWidget* grid() const { return m_grid; }
  QString verdict() const;
  QString headline() const;
  QString findings() const;
  // Whether the run shown is a running job, whose ranks can be asked for their stacks.
  void setAskable(bool askable);
  QPushButton* askButton() const { return m_ask; }

 signals:
  // A grid cell was clicked: that rank's record of the collective, as a time range of
  // the run (created or started .. completed, or the latest time known).
  void collectiveClicked(int rank, qint64 begin_ns, qint64 end_ns, const QString& what);
  // "Ask every rank for its stack now" was pressed.
  void askForStacks();

 private:
  void setGrid(const probes::HangReport& report);

  QLabel* m_headline;
  QLabel* m_verdict;
  QLabel* m_gridTitle;
  QTableWidget* m_grid;
  QLabel* m_findings;
  QTableWidget* m_table;
  QPushButton* m_ask;
};

}  // namespace ddpscope::gui
