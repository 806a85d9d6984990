#include "ranks_page.h"
#include "slow_cause_text.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "rank_bandwidth.h"
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
  const std::vector<OverviewMetric> cpu = {
      OverviewMetric::Iteration, OverviewMetric::ExposedComm, OverviewMetric::ExposedWait, OverviewMetric::Forward,
      OverviewMetric::Backward,  OverviewMetric::Optimizer,   OverviewMetric::Idle};
  const std::vector<OverviewMetric> on_gpu = {OverviewMetric::Iteration, OverviewMetric::ExposedComm,
                                              OverviewMetric::ExposedWait, OverviewMetric::GpuComputation,
                                              OverviewMetric::Idle};
  for (auto m : gpu ? on_gpu : cpu)
    m_metric->addItem(tr(metricLabel(m)), static_cast<int>(m));
  const int index = m_metric->findData(keep);
  m_metric->setCurrentIndex(index >= 0 ? index : 0);
}

// The part of the breakdown the verdict's straggler is slow in, so that its row stands out
// in the map (coloured by iteration time, every rank of a synchronous job looks alike: the
// ones that wait take as long as the one they wait for). Iteration time where the verdict
// names no rank, or a phase the map does not hold (outside the step is between iterations).
static OverviewMetric metricOfVerdict(const probes::SlowCause& cause, bool gpu) {
  const std::string& phase = cause.straggler.phase;
  if (cause.straggler.rank < 0) return OverviewMetric::Iteration;
  if (phase == "transfer") return OverviewMetric::ExposedComm;
  if (gpu && (phase == "forward" || phase == "backward" || phase == "optimizer")) return OverviewMetric::GpuComputation;
  if (phase == "forward") return OverviewMetric::Forward;
  if (phase == "backward") return OverviewMetric::Backward;
  if (phase == "optimizer") return OverviewMetric::Optimizer;
  return OverviewMetric::Iteration;
}

void RanksPage::setRun(std::shared_ptr<const RunData> run) {
  // Another run opens coloured by its verdict's phase; a reload of the same run (a live job)
  // keeps what the user chose.
  const bool another = run && (!m_run || m_run->path != run->path);
  m_run = std::move(run);
  m_rows = m_run ? probes::breakdown_by_iteration(m_run->analysis) : std::vector<probes::TimeBreakdown>{};
  const bool gpu = std::any_of(m_rows.begin(), m_rows.end(), [](const auto& r) { return r.gpu; });
  fillMetrics(gpu);
  if (another) {
    const QSignalBlocker block(m_metric);
    const int index = m_metric->findData(static_cast<int>(metricOfVerdict(m_run->cause, gpu)));
    m_metric->setCurrentIndex(index >= 0 ? index : 0);
  }
  rebuild();
}

// The slowest rank by the chosen part, against the others (never against itself).
QString RanksPage::headlineOf(const RankOverview& o, OverviewMetric metric) const {
  const SlowestRank s = slowestRank(o);
  const auto count = [](size_t n, const QString& one, const QString& many) { return n == 1 ? one : many.arg(n); };
  QString text = tr("<b>%1 × %2</b>, coloured by %3.")
                     .arg(count(o.rows.size(), tr("1 rank"), tr("%1 ranks")),
                          count(o.iterations.size(), tr("1 iteration"), tr("%1 iterations")), tr(metricLabel(metric)));
  QString who = tr("rank %1").arg(s.row->rank);
  if (!s.row->host.empty()) who += tr(" on %1").arg(QString::fromStdString(s.row->host).toHtmlEscaped());
  if (s.others == 0) return text + tr(" Mean %1 ms.").arg(s.row->mean_ms, 0, 'f', 2);
  const QString against = s.others == 1
                              ? tr("rank %1's %2 ms").arg(s.other_rank).arg(s.others_ms, 0, 'f', 2)
                              : tr("the median of the other %1 ranks, %2 ms").arg(s.others).arg(s.others_ms, 0, 'f', 2);
  const double over = s.overPercent();
  // With a verdict (slow_cause.h), the page opens with it: the rank the others wait for, which
  // is often not the one with the longest mean (a waiting rank's iteration holds its wait).
  if (m_run && m_run->cause.not_analysed.empty()) {
    text = QStringLiteral("<b>%1</b> %2 ")
               .arg(tr("Why:"), QString::fromStdString(probes::slow_cause_verdict(m_run->cause)).toHtmlEscaped()) +
           text;
    return text + tr(" Highest mean: %1, %2 ms against %3 (+%4%).")
                      .arg(who)
                      .arg(s.row->mean_ms, 0, 'f', 2)
                      .arg(against)
                      .arg(over, 0, 'f', 1);
  }
  if (over < 100 * kTiedFraction)
    return text + tr(" No rank stands out: the slowest, %1, has a mean of %2 ms against %3.")
                      .arg(who)
                      .arg(s.row->mean_ms, 0, 'f', 2)
                      .arg(against);
  return text + tr(" Slowest: %1, mean %2 ms against %3 (+%4%).")
                    .arg(who)
                    .arg(s.row->mean_ms, 0, 'f', 2)
                    .arg(against)
                    .arg(over, 0, 'f', 1);
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
    const std::string bandwidth = rankBandwidthSentence(*m_run);
    m_headline->setText(headlineOf(o, metric) +
                        (bandwidth.empty() ? QString() : " " + QString::fromStdString(bandwidth).toHtmlEscaped()));
  }
  m_view->setOverview(std::move(o));
}

void RanksPage::showRun(const ShownRun& shown) { setRun(shown.run); }

}  // namespace ddpscope::gui
