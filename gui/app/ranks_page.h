// RanksPage: a thousand ranks at a glance. The heat map of every rank's iterations
// (rank_overview_view.h) for a chosen part of the time breakdown, ranks ordered slowest
// first (or by rank, or by host), under a line naming the slowest rank against the
// median one. A click on a cell opens the timeline at that rank's iteration.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "rank_overview.h"
#include "run_page.h"

class QComboBox;
class QLabel;

namespace ddpscope::gui {

struct RunData;
class RankOverviewView;

class RanksPage : public QWidget, public RunPage {
  Q_OBJECT

 public:
  explicit RanksPage(QWidget* parent = nullptr);
  void showRun(const ShownRun& shown) override;
  void setRun(std::shared_ptr<const RunData> run);
  RankOverviewView* view() const { return m_view; }
  QComboBox* metricBox() const { return m_metric; }
  QComboBox* orderBox() const { return m_order; }
  QString headline() const;

 signals:
  void iterationClicked(int rank, qint64 iteration);

 private:
  void fillMetrics(bool gpu);
  void rebuild();
  QString headlineOf(const RankOverview& o, OverviewMetric metric) const;

  std::shared_ptr<const RunData> m_run;
  std::vector<probes::TimeBreakdown> m_rows;
  QComboBox* m_metric = nullptr;
  QComboBox* m_order = nullptr;
  QLabel* m_headline = nullptr;
  RankOverviewView* m_view = nullptr;
};

}  // namespace ddpscope::gui
