#include "overlap_page.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <set>

#include "chart_axis.h"
#include "chart_theme.h"
#include "chart_title.h"
#include "empty_state.h"
#include "kind_colors.h"
#include "overlap_model.h"
#include "sortable_table.h"

namespace ddpscope::gui {

OverlapPage::OverlapPage(QWidget* parent) : QWidget(parent), m_model(new OverlapModel(this)) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  m_rank = new QComboBox;
  bar->addWidget(new QLabel(tr("Rank")));
  bar->addWidget(m_rank);
  m_stragglerNote = new QLabel;
  bar->addWidget(m_stragglerNote);
  bar->addStretch();
  layout->addLayout(bar);
  m_chart = new QChartView;
  m_chart->setRenderHint(QPainter::Antialiasing);
  m_chart->setMinimumHeight(260);
  auto* content = new QWidget;
  auto* contentLayout = new QVBoxLayout(content);
  contentLayout->setContentsMargins(0, 0, 0, 0);
  contentLayout->addWidget(m_chart, 2);
  m_legend = new QLabel;
  m_legend->setObjectName(QStringLiteral("legend"));
  m_legend->setWordWrap(true);
  m_legend->setContentsMargins(6, 0, 6, 0);
  contentLayout->addWidget(m_legend);
  m_table = makeSortableTable(m_model);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  contentLayout->addWidget(m_table, 1);
  m_empty = new EmptyState(content);
  layout->addWidget(m_empty, 1);
  connect(m_rank, &QComboBox::currentIndexChanged, this, [this] { update(); });
}

void OverlapPage::clear() {
  m_model->setRun(nullptr);
  m_run.reset();
}

void OverlapPage::setRun(std::shared_ptr<const RunData> run, bool keepRank) {
  m_run = std::move(run);
  const int previous = m_rank->currentIndex();
  {
    const QSignalBlocker block(m_rank);
    m_rank->clear();
    for (const auto& r : m_run->ranks)
      m_rank->addItem(QString::number(r.rank), r.rank);
    m_rank->setCurrentIndex(keepRank ? std::max(0, previous) : 0);
  }
  update();
}

void OverlapPage::update() {
  if (!m_run) return;
  const int rank = m_rank->currentData().toInt();
  m_model->setRun(m_run.get(), rank);
  // The one straggler rule (overlap_analysis.h), said as it applies to this run.
  const bool gpu = std::any_of(m_run->analysis.iterations.begin(), m_run->analysis.iterations.end(),
                               [](const auto& it) { return it.from_gpu; });
  m_stragglerNote->setText(gpu ? tr("Orange rows and bars: this rank was the straggler (its GPU computation took "
                                    "longest; the others waited in their NCCL kernels).")
                               : tr("Orange rows and bars: this rank was the straggler (its allreduces started "
                                    "last)."));
  QChart* old = m_chart->chart();
  m_chart->setChart(makeChart(rank));
  setWrappedTitle(m_chart, m_chart->chart()->title());
  delete old;
}

namespace {

// Iteration numbers under the bars: each bar's while they fit, else every k-th (a 1-2-5
// step), placed on its bar.
QAbstractAxis* iterationAxis(const QVector<int64_t>& numbers) {
  const int n = static_cast<int>(numbers.size());
  if (n <= 40) {
    auto* x = new QBarCategoryAxis;
    for (int64_t it : numbers)
      x->append(QString::number(it));
    return x;
  }
  auto* x = new QCategoryAxis;
  x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  x->setRange(-0.5, n - 0.5);
  int step = 1;
  for (int m = 0; step * 20 < n; ++m)
    step = (m % 3 == 0 ? 2 : m % 3 == 1 ? 5 : 10) * static_cast<int>(std::pow(10, m / 3));
  for (int i = 0; i < n; ++i) {
    if (numbers[i] % step == 0) x->append(QString::number(numbers[i]), i);
  }
  return x;
}

// The rank's iterations to draw: at most the latest kMaxBars (more are unreadable, and
// slow to lay out; the table below keeps every iteration).
std::vector<const probes::IterationAnalysis*> iterationsShown(const probes::RunAnalysis& analysis, int rank,
                                                              size_t* total) {
  constexpr size_t kMaxBars = 300;
  std::vector<const probes::IterationAnalysis*> shown;
  for (const auto& it : analysis.iterations) {
    if (it.rank == rank) shown.push_back(&it);
  }
  *total = shown.size();
  if (shown.size() > kMaxBars) shown.erase(shown.begin(), shown.end() - static_cast<std::ptrdiff_t>(kMaxBars));
  return shown;
}

// The iterations along x, milliseconds up y: from 0 to a little above the tallest bar.
void addAxes(QChart* chart, QAbstractSeries* series, const QVector<int64_t>& numbers, double top) {
  QAbstractAxis* x = iterationAxis(numbers);
  x->setTitleText(OverlapPage::tr("iteration"));
  auto* y = new QValueAxis;
  y->setRange(0, top * 1.05 + 1e-6);
  y->applyNiceNumbers();
  setReadableLabels(y);
  y->setTitleText(OverlapPage::tr("ms"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
}

}  // namespace

// The legend in a label under the chart, wrapped to its width, each entry whole on one
// line: Qt Charts' own legend lays its entries in one row, and cut the GPU's long names
// to "..." at 1280x800 and 1024x700.
void OverlapPage::showLegend(const QStackedBarSeries* series) {
  series->chart()->legend()->hide();
  QStringList entries;
  for (QBarSet* set : series->barSets()) {
    QString name = set->label().toHtmlEscaped();
    entries << QStringLiteral("<span style='color:%1'>■</span>&nbsp;%2")
                   .arg(set->color().name(), name.replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
  }
  m_legend->setText(entries.join(QStringLiteral(" &nbsp; ")));
}

QChart* OverlapPage::makeChart(int rank) {
  std::set<int64_t> straggling;
  for (const auto& s : probes::find_stragglers(m_run->analysis)) {
    if (s.rank == rank) straggling.insert(s.iteration);
  }
  // Stacked per iteration, its parts adding up to the iteration's time: compute alone,
  // compute with communication hidden behind it, exposed communication, the rest (the
  // optimizer, waiting). Stacking the hidden communication on top of compute drew a
  // 98 ms iteration 127 ms tall: that communication ran during the compute.
  size_t total = 0;
  const auto shown = iterationsShown(m_run->analysis, rank, &total);
  // GPU truth first: where the rank ran kernels, its bars are the GPU's (overlap_analysis.h).
  const bool gpu = std::any_of(shown.begin(), shown.end(), [](auto* it) { return it->from_gpu; });
  auto* compute = new QBarSet(gpu ? tr("GPU computation") : tr("compute"));
  // Straggler iterations are drawn as selected compute bars; this empty set only gives
  // their colour a legend entry.
  auto* stragglerKey = new QBarSet(tr("compute, straggler iteration"));
  auto* hidden =
      new QBarSet(gpu ? tr("computation with NCCL kernels beside it") : tr("compute with comm hidden behind it"));
  auto* exposed = new QBarSet(gpu ? tr("exposed comm (NCCL kernels alone)") : tr("exposed comm"));
  auto* rest = new QBarSet(gpu ? tr("other (GPU idle, copies)") : tr("other (optimizer, waiting)"));
  const QColor straggler(0xf2, 0x8e, 0x2b);
  double top = 0;
  QVector<int64_t> numbers;
  for (const probes::IterationAnalysis* p : shown) {
    const auto& it = *p;
    const double overlapped = std::clamp(it.comm_ms - it.exposed_comm_ms, 0.0, it.compute_ms);
    *compute << it.compute_ms - overlapped;
    *stragglerKey << 0;
    *hidden << overlapped;
    *exposed << it.exposed_comm_ms;
    *rest << std::max(0.0, it.iteration_ms - it.compute_ms - it.exposed_comm_ms);
    numbers << it.iteration;
    top = std::max(top, std::max(it.iteration_ms, it.compute_ms + it.exposed_comm_ms));
  }
  auto* series = new QStackedBarSeries;
  series->append(compute);
  series->append(stragglerKey);
  series->append(hidden);
  series->append(exposed);
  series->append(rest);
  series->setBarWidth(0.9);
  auto* chart = new QChart;
  applyChartTheme(chart, palette());
  chart->addSeries(series);
  // Colours after the series joined the themed chart (the theme sets its own).
  compute->setColor(kindColor(probes::Kind::Forward));
  compute->setSelectedColor(straggler);
  stragglerKey->setColor(straggler);
  hidden->setColor(kindColor(probes::Kind::Allreduce));
  exposed->setColor(QColor(0xd6, 0x27, 0x28));
  rest->setColor(palette().color(QPalette::Mid));
  for (int i = 0; i < numbers.size(); ++i) {
    if (straggling.count(numbers[i])) compute->selectBar(i);
  }
  chart->setTitle(tr("Rank %1: %5 per iteration%2 (straggler in %3 of %4) · click a bar "
                     "to see that iteration in the timeline")
                      .arg(rank)
                      .arg(total > shown.size() ? tr(", the last %1").arg(shown.size()) : QString())
                      .arg(straggling.size())
                      .arg(total)
                      .arg(gpu ? tr("the GPU's computation and NCCL kernels") : tr("compute and communication")));
  addAxes(chart, series, numbers, top);
  showLegend(series);
  chart->setAnimationOptions(QChart::NoAnimation);
  connect(series, &QAbstractBarSeries::clicked, this, [this, numbers](int index, QBarSet*) {
    if (index >= 0 && index < numbers.size()) emit iterationClicked(numbers[index]);
  });
  return chart;
}

void OverlapPage::showRun(const ShownRun& shown) { setRun(shown.run, shown.sameRun); }

std::optional<QString> OverlapPage::whyEmpty(const RunData* run) const {
  return !run ? noRunOpen() : run->analysis.iterations.empty() ? noDdpIterations() : QString();
}

}  // namespace ddpscope::gui
