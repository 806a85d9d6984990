// TimeBreakdownPage: "Where the time went". Every rank side by side, one stacked bar
// each (forward, backward compute, exposed communication, optimizer, idle; hidden
// communication as a thin bar under it), for the mean iteration or one iteration, the
// straggler marked; a sortable table of the same numbers; and the top ops of that time.
#pragma once

#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "time_breakdown.h"
#include "run_page.h"

class QComboBox;
class QLabel;
class QStandardItemModel;
class QTableView;

namespace ddpscope::gui {

struct RunData;
using probes::TimeBreakdown;

// The stacked bars, painted: one row per rank, a shared scale.
class BreakdownBars : public QWidget {
  Q_OBJECT

 public:
  explicit BreakdownBars(QWidget* parent = nullptr);
  void setRows(std::vector<TimeBreakdown> rows, int straggler);
  // Labels for the rows in order, instead of "rank N" (the Compare page's "A · run").
  void setRowLabels(QStringList labels) {
    m_labels = std::move(labels);
    update();
  }
  const std::vector<TimeBreakdown>& rows() const { return m_rows; }
  int straggler() const { return m_straggler; }  // the rank drawn as the straggler; -1: none
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<TimeBreakdown> m_rows;
  QStringList m_labels;
  int m_straggler = -1;
};

class TimeBreakdownPage : public QWidget, public RunPage {
  Q_OBJECT

 public:
  explicit TimeBreakdownPage(QWidget* parent = nullptr);
  void showRun(const ShownRun& shown) override;
  void setRun(std::shared_ptr<const RunData> run);
  QComboBox* iterationChoice() const { return m_choice; }
  BreakdownBars* bars() const { return m_bars; }
  QLabel* headline() const { return m_headline; }
  QStandardItemModel* rankModel() const { return m_rankModel; }
  QStandardItemModel* opsModel() const { return m_opsModel; }
  QTableView* rankTable() const { return m_rankTable; }
  QTableView* opsTable() const { return m_opsTable; }

 private:
  void showChoice();
  QString headline(const std::vector<TimeBreakdown>& rows, const std::vector<TimeBreakdown>& means, int64_t iteration,
                   int shown_straggler) const;
  void fillRankTable(const std::vector<TimeBreakdown>& rows, int64_t iteration, int shown_straggler);
  void fillTopOps(const std::vector<TimeBreakdown>& means, int64_t iteration);

  std::shared_ptr<const RunData> m_run;
  std::vector<TimeBreakdown> m_byIteration;
  QLabel* m_headline = nullptr;
  QComboBox* m_choice = nullptr;
  BreakdownBars* m_bars = nullptr;
  QStandardItemModel* m_rankModel = nullptr;
  QStandardItemModel* m_opsModel = nullptr;
  QTableView* m_rankTable = nullptr;
  QTableView* m_opsTable = nullptr;
};

}  // namespace ddpscope::gui
