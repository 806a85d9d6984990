#include "ranks_page.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "rank_overview_view.h"
#include "run_data.h"

namespace ddpscope::gui {

RanksPage::RanksPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  m_metric = new QComboBox;
  fillMetrics(false);
  m_order = new QComboBox;
  m_order->addItem(tr("slowest first"), static_cast<int>(OverviewOrder::SlowestFirst));
  m_order->addItem(tr("by rank"), static_cast<int>(OverviewOrder::ByRank));
  m_order->addItem(tr("by host"), static_cast<int>(OverviewOrder::ByHost));
  bar->addWidget(new QLabel(tr("Colour:")));
  bar->addWidget(m_metric);
  bar->addWidget(new QLabel(tr("Ranks:")));
  bar->addWidget(m_order);
  bar->addStretch(1);
  layout->addLayout(bar);
  m_headline = new QLabel;
  m_headline->setWordWrap(true);
  m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_headline);
  m_view = new RankOverviewView;
  layout->addWidget(m_view, 1);
  connect(m_metric, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  connect(m_order, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  connect(m_view, &RankOverviewView::cellClicked, this, &RanksPage::iterationClicked);
}

// The parts a rank's iterations split into: the CPU's phases, or the GPU's split where
// the run has kernels (time_breakdown.h).
void RanksPage::fillMetrics(bool gpu) {
  QSignalBlocker block(m_metric);
  const int keep = m_metric->currentData().toInt();
  m_metric->clear();
  const std::vector<OverviewMetric> cpu = {OverviewMetric::Iteration, OverviewMetric::ExposedComm,
                                           OverviewMetric::Forward,   OverviewMetric::Backward,
                                           OverviewMetric::Optimizer, OverviewMetric::Idle};
  const std::vector<OverviewMetric> on_gpu = {OverviewMetric::Iteration, OverviewMetric::ExposedComm,
                                              OverviewMetric::GpuComputation, OverviewMetric::Idle};
  for (auto m : gpu ? on_gpu : cpu)
    m_metric->addItem(tr(metricLabel(m)), static_cast<int>(m));
  const int index = m_metric->findData(keep);
  m_metric->setCurrentIndex(index >= 0 ? index : 0);
}

void RanksPage::setRun(std::shared_ptr<const RunData> run) {
  m_run = std::move(run);
  m_rows = m_run ? probes::breakdown_by_iteration(m_run->analysis) : std::vector<probes::TimeBreakdown>{};
  fillMetrics(std::any_of(m_rows.begin(), m_rows.end(), [](const auto& r) { return r.gpu; }));
  rebuild();
}

QString RanksPage::headline() const { return m_headline->text(); }

void RanksPage::rebuild() {
  if (!m_run) return;
  const auto metric = static_cast<OverviewMetric>(m_metric->currentData().toInt());
  RankOverview o =
      makeRankOverview(m_rows, m_run->ranks, metric, static_cast<OverviewOrder>(m_order->currentData().toInt()));
  if (o.rows.empty()) {
    m_headline->clear();
  } else {
    // The slowest rank by the chosen part, against the median rank.
    const OverviewRow* slowest = &o.rows.front();
    for (const OverviewRow& r : o.rows)
      if (r.mean_ms > slowest->mean_ms) slowest = &r;
    const double over = o.median_rank_mean_ms > 0 ? 100 * (slowest->mean_ms / o.median_rank_mean_ms - 1) : 0;
    QString text = tr("<b>%1 ranks × %2 iterations</b>, coloured by %3. Slowest: rank %4")
                       .arg(o.rows.size())
                       .arg(o.iterations.size())
                       .arg(tr(metricLabel(metric)))
                       .arg(slowest->rank);
    if (!slowest->host.empty()) text += tr(" on %1").arg(QString::fromStdString(slowest->host).toHtmlEscaped());
    text += tr(", mean %1 ms against the median rank's %2 ms (%3%4%).")
                .arg(slowest->mean_ms, 0, 'f', 2)
                .arg(o.median_rank_mean_ms, 0, 'f', 2)
                .arg(over >= 0 ? "+" : "")
                .arg(over, 0, 'f', 1);
    m_headline->setText(text);
  }
  m_view->setOverview(std::move(o));
}

}  // namespace ddpscope::gui
