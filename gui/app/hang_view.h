// HangView: who stalled the job and where each rank stands. First the verdict and the
// flight recorder's grid of the collectives around the first mismatch (ranks x sequence
// numbers, each cell coloured by its state; a click opens the timeline there); then, from
// the latest probe events, the collective each rank is blocked in, where its code stands,
// the buckets still waiting for gradients or for their allreduce, and the gradients that
// have not arrived; beside the table, the selected rank's whole stack (stack_panel.h).
// Shown live when a job stops making progress, and for a finished or failed run.
#pragma once

#include <QWidget>

#include "hang_analysis.h"
#include "run_page.h"

class QLabel;
class QPushButton;
class QSplitter;
class QTableWidget;

namespace ddpscope::gui {

class StackPanel;

class HangView : public QWidget, public RunPage {
  Q_OBJECT

 public:
  explicit HangView(QWidget* parent = nullptr);
  void showRun(const ShownRun& shown) override;
  std::optional<QString> whyEmpty(const RunData* run) const override;

  // The per-rank table's columns: what a hang is about first, so that at 1024x700 (the run
  // list shown) what each rank waits for stays in view; the code, which the stack panel
  // beside the table shows whole, last.
  enum Column {
    Rank,
    Iteration,
    Phase,
    BlockedIn,
    WaitingForAllreduce,
    GradientsNotArrived,
    WaitingForGradients,
    Code
  };

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
  // The selected rank's stack, beside the table.
  StackPanel* stackPanel() const { return m_stackPanel; }

 signals:
  // A grid cell was clicked: that rank's record of the collective, as a time range of
  // the run (created or started .. completed, or the latest time known).
  void collectiveClicked(int rank, qint64 begin_ns, qint64 end_ns, const QString& what);
  // "Ask every rank for its stack now" was pressed.
  void askForStacks();

 private:
  void setGrid(const probes::HangReport& report);
  void setTable(const probes::HangReport& report);  // each rank's row; the selection cleared
  void showStackOfSelectedRank();
  int rankToShowFirst(const probes::HangReport& report) const;

  QLabel* m_headline;
  QLabel* m_verdict;
  QLabel* m_gridTitle;
  QTableWidget* m_grid;
  QLabel* m_findings;
  QTableWidget* m_table;
  StackPanel* m_stackPanel;
  QPushButton* m_ask;
  std::vector<probes::StackCapture> m_stacks;  // the report's, one per rank at most
  qint64 m_runStartNs = 0;
  int m_shownRank = -1;  // the rank whose stack is shown: kept across a live job's reloads
};

}  // namespace ddpscope::gui
