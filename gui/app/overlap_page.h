// OverlapPage: per rank, each iteration's compute, the communication hidden behind it
// and the exposed communication, as stacked bars (straggler iterations marked) over a
// table of every iteration. A click on a bar asks for that iteration in the timeline.
#pragma once

#include <QWidget>
#include <memory>

#include "run_data.h"
#include "run_page.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QStackedBarSeries;
class QTableView;

namespace ddpscope::gui {

class EmptyState;
class OverlapModel;

class OverlapPage : public QWidget, public RunPage {
  Q_OBJECT

 public:
  explicit OverlapPage(QWidget* parent = nullptr);
  void showRun(const ShownRun& shown) override;
  void releaseRun(bool sameRun) override { clear(); }
  std::optional<QString> whyEmpty(const RunData* run) const override;
  // Shows `run`; `keepRank`: a live reload of the same run keeps the rank picked.
  void setRun(std::shared_ptr<const RunData> run, bool keepRank);
  void clear();
  EmptyState* emptyState() const { return m_empty; }
  QChartView* chartView() const { return m_chart; }
  OverlapModel* model() const { return m_model; }
  QTableView* table() const { return m_table; }

 signals:
  void iterationClicked(int64_t iteration);

 private:
  void update();
  QChart* makeChart(int rank);
  void showLegend(const QStackedBarSeries* series);

  std::shared_ptr<const RunData> m_run;
  OverlapModel* m_model = nullptr;
  QComboBox* m_rank = nullptr;
  QLabel* m_stragglerNote = nullptr;
  QLabel* m_legend = nullptr;  // the chart's, wrapped to its width
  QChartView* m_chart = nullptr;
  QTableView* m_table = nullptr;
  EmptyState* m_empty = nullptr;
};

}  // namespace ddpscope::gui
