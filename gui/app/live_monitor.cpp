#include "live_monitor.h"

#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QLogValueAxis>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <nlohmann/json.hpp>

#include "category_palette.h"
#include "chart_axis.h"
#include "chart_theme.h"
#include "chart_title.h"
#include "plural.h"
#include "slow_cause_text.h"

namespace ddpscope::gui {

LiveMonitor::LiveMonitor(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  m_progress = new QProgressBar;
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(tr("%v / %m iterations"));
  m_status = new QLabel(tr("No job running. Use Run > Launch job..."));
  m_status->setWordWrap(true);
  m_stop = new QPushButton(tr("Stop"));
  m_stop->setEnabled(false);
  connect(m_stop, &QPushButton::clicked, this, &LiveMonitor::stopRequested);
  m_logBox = new QCheckBox(tr("Log scale (iteration time)"));
  m_logBox->setToolTip(tr("Show every iteration time on a log scale instead of clipping outliers"));
  connect(m_logBox, &QCheckBox::toggled, this, &LiveMonitor::setLogScale);
  bar->addWidget(m_progress, 2);
  bar->addWidget(m_logBox);
  bar->addWidget(m_stop);
  layout->addLayout(bar);
  layout->addWidget(m_status);
  m_verdict = new QLabel;
  m_verdict->setWordWrap(true);
  m_verdict->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_verdict);
  auto* grid = new QGridLayout;
  m_loss = makeChart(tr("Loss"), tr("loss"));
  m_rate = makeChart(tr("Throughput"), tr("samples/s"));
  m_iterationMs = makeChart(tr("Iteration time per rank"), tr("ms"));
  m_overlap = makeChart(tr("Overlap ratio per rank"), tr("hidden comm / comm"));
  grid->addWidget(m_loss.view, 0, 0);
  grid->addWidget(m_rate.view, 0, 1);
  grid->addWidget(m_iterationMs.view, 1, 0);
  grid->addWidget(m_overlap.view, 1, 1);
  layout->addLayout(grid, 1);
}

LiveMonitor::Chart LiveMonitor::makeChart(const QString& title, const QString& yTitle) {
  Chart c;
  auto* chart = new QChart;
  applyChartTheme(chart, palette());
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignBottom);
  c.x = new QValueAxis;
  c.x->setTitleText(tr("iteration"));
  c.y = new QValueAxis;
  c.y->setTitleText(yTitle);
  chart->addAxis(c.x, Qt::AlignBottom);
  chart->addAxis(c.y, Qt::AlignLeft);
  c.view = new QChartView(chart);
  c.view->setMinimumSize(280, 180);
  setWrappedTitle(c.view, title);
  return c;
}

QLineSeries* LiveMonitor::seriesFor(Chart& chart, int key, const QString& name, bool perRank) {
  auto it = chart.series.find(key);
  if (it != chart.series.end()) return it->second;
  auto* s = new QLineSeries;
  s->setName(name);
  chart.series[key] = s;
  // In rank order, whichever rank's points came first, so that the legends of the charts
  // side by side read alike: a later, lower rank puts the series back in order.
  QChart* c = chart.view->chart();
  QAbstractAxis* y = &chart == &m_iterationMs && m_logScale ? static_cast<QAbstractAxis*>(m_logY) : chart.y;
  for (auto& [k, series] : chart.series) {
    if (series != s && k < key) continue;
    if (series != s) c->removeSeries(series);
    c->addSeries(series);
    series->attachAxis(chart.x);
    series->attachAxis(y);
    if (perRank) series->setColor(rankColor(k));  // one colour per rank in every chart
  }
  return s;
}

// A tick step of 1, 2 or 5 times a power of ten giving at most about `ticks` intervals.
static double roundStep(double span, int ticks) {
  const double raw = std::max(span / ticks, 1.0);  // iterations are whole numbers
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

AxisFit fitAxes(const std::vector<QPointF>& points, bool clip_outliers) {
  AxisFit f;
  std::vector<double> ys;
  for (const QPointF& p : points) {
    if (!std::isfinite(p.y())) continue;
    f.x1 = std::max(f.x1, p.x());
    ys.push_back(p.y());
  }
  if (ys.empty()) return f;
  std::sort(ys.begin(), ys.end());
  // Every quantity charted here is >= 0 (loss, samples/s, ms, a ratio): the axis starts
  // at 0, so a bar's height reads as its value and no axis shows "-0.02".
  f.y1 = ys.back() * 1.05;
  if (clip_outliers && ys.size() >= 20) {
    // One 25 s spike must not flatten a chart of 200 ms iterations: the axis ends a
    // little above the 95th percentile, and the points above it are counted.
    const double p95 = ys[ys.size() * 95 / 100];
    if (ys.back() > 2 * p95 && p95 > 0) {
      f.y1 = p95 * 1.5;
      f.clipped = static_cast<int>(ys.end() - std::upper_bound(ys.begin(), ys.end(), f.y1));
      f.max = ys.back();
    }
  }
  if (f.y1 <= 0) f.y1 = 1;
  return f;
}

void LiveMonitor::fit(Chart& chart, bool clipOutliers) {
  std::vector<QPointF> points;
  for (const auto& [key, s] : chart.series) {
    const auto list = s->points();
    points.insert(points.end(), list.begin(), list.end());
  }
  const AxisFit f = fitAxes(points, clipOutliers);  // no points: 0..1 both ways
  // The x axis ends at the last iteration (60 iterations: not to 100), with round ticks
  // from 0: 0, 10, 20 ... not 9.7, 19.4.
  const double last = std::max({f.x1, m_xEnd, m_xBegin + 1, 1.0});
  chart.x->setRange(m_xBegin, last);
  chart.x->setTickType(QValueAxis::TicksDynamic);
  chart.x->setTickAnchor(m_xBegin);
  chart.x->setTickInterval(roundStep(last - m_xBegin, 6));
  chart.y->setRange(0, f.y1);
  chart.y->applyNiceNumbers();
  if (&chart == &m_overlap) {  // a ratio: 0 to 1, whatever it reached, in steps of 0.2
    chart.y->setRange(0, 1);
    chart.y->setTickCount(6);
  }
  setReadableLabels(chart.x);
  setReadableLabels(chart.y);
  // The points above the axis as drawn: rounding the axis up may have brought some in.
  chart.clipped = 0;
  chart.clippedMax = 0;
  if (f.clipped > 0) {
    for (const QPointF& p : points) {
      if (std::isfinite(p.y()) && p.y() > chart.y->max()) {
        ++chart.clipped;
        chart.clippedMax = std::max(chart.clippedMax, p.y());
      }
    }
  }
  if (&chart == &m_iterationMs && m_logScale) {
    // Every point: from a little under the smallest positive one to over the largest.
    double lo = 0, hi = 0;
    for (const QPointF& p : points) {
      if (p.y() <= 0) continue;
      lo = lo == 0 ? p.y() : std::min(lo, p.y());
      hi = std::max(hi, p.y());
    }
    if (hi > 0)
      m_logY->setRange(std::pow(10, std::floor(std::log10(lo))), std::pow(10, std::ceil(std::log10(hi * 1.05))));
    chart.clipped = 0;
  }
}

void LiveMonitor::setLogScale(bool on) {
  if (on == m_logScale) return;
  m_logScale = on;
  if (m_logBox->isChecked() != on) m_logBox->setChecked(on);
  QChart* chart = m_iterationMs.view->chart();
  QAbstractAxis* from = on ? static_cast<QAbstractAxis*>(m_iterationMs.y) : m_logY;
  if (on && !m_logY) {
    m_logY = new QLogValueAxis;
    m_logY->setBase(10);
    m_logY->setLabelFormat(QStringLiteral("%g"));
    m_logY->setMinorTickCount(-1);
    m_logY->setTitleText(tr("ms (log scale)"));
  }
  QAbstractAxis* to = on ? static_cast<QAbstractAxis*>(m_logY) : m_iterationMs.y;
  for (auto& [key, s] : m_iterationMs.series)
    s->detachAxis(from);
  chart->removeAxis(from);
  from->setParent(this);  // kept for switching back; the chart owns only the one it shows
  chart->addAxis(to, Qt::AlignLeft);
  for (auto& [key, s] : m_iterationMs.series)
    s->attachAxis(to);
  fit(m_iterationMs, true);
  updateIterationTitle();
}

void LiveMonitor::updateIterationTitle() {
  setWrappedTitle(m_iterationMs.view,
                  m_iterationMs.clipped == 0 ? tr("Iteration time per rank")
                  : m_iterationMs.clipped == 1
                      ? tr("Iteration time per rank · 1 point above the axis, at %1 ms (try the log scale)")
                            .arg(m_iterationMs.clippedMax, 0, 'f', 1)
                      : tr("Iteration time per rank · %1 points above the axis, the largest %2 ms (try the log scale)")
                            .arg(m_iterationMs.clipped)
                            .arg(m_iterationMs.clippedMax, 0, 'f', 1));
}

void LiveMonitor::setProgress(int iteration, int total, double loss, double rate, bool hasLoss) {
  m_lastIteration = std::max(m_lastIteration, iteration);
  const QString lossText = hasLoss ? tr(" · loss %1").arg(loss, 0, 'f', 4) : QString();
  if (total <= 0) {  // a script's loop: no end known, so the bar only shows it is alive
    m_progress->setRange(0, 0);
    m_status->setText(tr("iteration %1%2 · %3 samples/s").arg(iteration).arg(lossText).arg(rate, 0, 'f', 0));
    return;
  }
  m_hasProgress = true;
  m_progressLoss = lossText;
  m_progressRate = rate;
  m_progress->setRange(0, std::max(total, 1));
  m_progress->setValue(iteration);
  showProgress(iteration, total);
}

void LiveMonitor::showProgress(int iteration, int total) {
  m_status->setText(tr("iteration %1 of %2%3 · %4 samples/s")
                        .arg(iteration)
                        .arg(total)
                        .arg(m_progressLoss)
                        .arg(m_progressRate, 0, 'f', 0));
}

void LiveMonitor::setStatus(const QString& text, bool running) {
  m_status->setText(text);
  m_stop->setEnabled(running);
  if (!running && m_progress->maximum() == 0) {  // a script's busy bar: the job is over
    m_progress->setRange(0, std::max(m_lastIteration, 1));
    m_progress->setValue(m_lastIteration);
  }
}

void LiveMonitor::setUnbounded() { m_progress->setRange(0, 0); }

// Why the iterations are slow: live, over the last few iterations (a rank that became slow
// is named within two of them); afterwards, over the whole run, as the Summary says it. The
// last reload of a followed job comes once it has ended: its run is no longer "running".
void LiveMonitor::showVerdict(const RunData& run, bool live) {
  live = live && run.run.status == "running";
  const probes::SlowCause& cause = live ? run.recent_cause : run.cause;
  if (cause.ranks < 2 || !cause.not_analysed.empty()) {
    m_verdict->clear();
    return;
  }
  const QString when = live ? tr("Now (the last %1):").arg(countOf(cause.iterations, tr("iteration"))) : tr("Why:");
  m_verdict->setText(QStringLiteral("<span style='color:%1'><b>%2</b> %3</span>")
                         .arg(cause.straggler.rank >= 0 ? QStringLiteral("#b85c00") : QStringLiteral("#555555"), when,
                              QString::fromStdString(probes::slow_cause_verdict(cause)).toHtmlEscaped()));
}

// Every chart's x axis ends at the run's last iteration, so the four line up even where one
// has fewer points (no iteration times from a script); it begins at 0, or just before the
// first iteration of a sample of a longer job. Returns the first iteration and whether the
// run is such a sample.
std::pair<double, bool> LiveMonitor::spanIterations(const RunData& run) {
  m_xEnd = 0;
  double first = std::numeric_limits<double>::max();
  for (const auto& it : run.analysis.iterations) {
    m_xEnd = std::max(m_xEnd, static_cast<double>(it.iteration));
    first = std::min(first, static_cast<double>(it.iteration));
  }
  for (const auto& m : run.metrics) {
    m_xEnd = std::max(m_xEnd, static_cast<double>(m.iteration));
    first = std::min(first, static_cast<double>(m.iteration));
  }
  const bool sample = first != std::numeric_limits<double>::max() && first > 10 && m_xEnd - first < first;
  m_xBegin = sample ? first - 1 : 0;
  return {first, sample};
}

QString LiveMonitor::finishedStatus(const RunData& run, const QString& fileName) {
  // A sample of a longer job (a profiler trace of iterations 551 and 552) is counted as
  // what it holds, with the numbers it has; a whole run by its last iteration.
  std::set<int64_t> held;
  for (const auto& it : run.analysis.iterations)
    held.insert(it.iteration);
  const bool sample = !held.empty() && *held.begin() > 10;
  const QString recorded = held.empty() ? countOf(0, tr("iteration"))
                           : sample     ? tr("%1 (%2 to %3 of the job)")
                                          .arg(countOf(static_cast<qint64>(held.size()), tr("iteration")))
                                          .arg(*held.begin())
                                          .arg(*held.rbegin())
                                    : countOf(*held.rbegin(), tr("iteration"));
  return tr("%1: %2 recorded (%3)").arg(fileName, recorded, QString::fromStdString(run.run.status));
}

void LiveMonitor::setRun(const RunData& run, bool live) {
  showVerdict(run, live);
  // Rebuilt from the whole run each time: replace() swaps a series' points at once.
  std::map<int, QList<QPointF>> loss, rate, iterationMs, overlap;
  for (const auto& m : run.metrics) {
    const QPointF p(static_cast<double>(m.iteration), m.value);
    if (!std::isfinite(m.value)) continue;  // a NaN loss has no place on an axis: said below
    if (m.name == "loss" && m.rank == 0) loss[0] << p;
    if (m.name == "samples_per_s" && m.rank == 0) rate[0] << p;
    if (m.name == "iteration_ms") iterationMs[m.rank] << p;
  }
  for (const auto& it : run.analysis.iterations) {
    if (std::isfinite(it.overlap_ratio))
      overlap[it.rank] << QPointF(static_cast<double>(it.iteration), it.overlap_ratio);
  }
  const auto [first, sample] = spanIterations(run);
  auto show = [this](Chart& chart, std::map<int, QList<QPointF>>& points, bool perRank, const QString& name) {
    for (auto& [key, list] : points) {
      seriesFor(chart, key, perRank ? tr("rank %1").arg(key) : name, perRank)->replace(list);
    }
    fit(chart, &chart == &m_iterationMs);
  };
  show(m_loss, loss, false, tr("loss (mean over ranks)"));
  // A script that logs no loss: a sentence, not an empty frame with ticks "0 0 0 0 1".
  const bool noLoss = loss.empty() && run.nonfinite_loss_iteration < 0;
  m_loss.x->setVisible(!noLoss);
  m_loss.y->setVisible(!noLoss);
  setWrappedTitle(m_loss.view,
                  noLoss ? tr("Loss: none reported. A PyTorch script reports it with ddpscope.log(loss=value)")
                  : run.nonfinite_loss_iteration < 0
                      ? tr("Loss")
                      : tr("Loss: not finite from iteration %1 on (see Summary)").arg(run.nonfinite_loss_iteration));
  show(m_rate, rate, false, tr("samples/s (all ranks)"));
  // No rate (a profiler trace, a script that reports no batch size): a sentence, not an
  // empty frame.
  m_rate.x->setVisible(!rate.empty());
  m_rate.y->setVisible(!rate.empty());
  setWrappedTitle(m_rate.view, rate.empty() && live ? tr("Throughput: none yet")
                               : rate.empty() ? tr("Throughput: none recorded (the run does not say how many samples "
                                                   "an iteration took: a profiler trace does not)")
                                              : tr("Throughput"));
  show(m_iterationMs, iterationMs, true, {});
  updateIterationTitle();
  show(m_overlap, overlap, true, {});
  // The bar agrees with the charts: the last iteration recorded, of the job's total.
  int last = 0;  // as the status line counts it: the analysis' iterations, or the losses
  for (const auto& it : run.analysis.iterations)
    last = std::max(last, static_cast<int>(it.iteration));
  for (const auto& m : run.metrics)
    if (m.name == "loss") last = std::max(last, static_cast<int>(m.iteration));
  m_lastIteration = live ? std::max(m_lastIteration, last) : last;
  // Live, the job's own progress lines lead the file: the bar only moves forward. A
  // script's run has no iteration count: live, its bar stays busy.
  int64_t configured = -1;
  try {
    configured = nlohmann::json::parse(run.run.config_json).value("iters", int64_t{-1});
  } catch (const nlohmann::json::exception&) {
  }
  if (live && configured < 0) return;
  if (!live || last > m_progress->value()) {
    int total = std::max(last, static_cast<int>(configured));
    if (live) total = std::max(total, m_progress->maximum());
    m_progress->setRange(0, std::max(total, 1));
    m_progress->setValue(last);
    // A sample of a longer job: which iterations it holds, not "552 / 552".
    m_progress->setFormat(
        sample && !live ? tr("iterations %1 to %2 of the job (a sample)").arg(static_cast<qint64>(first)).arg(last)
                        : tr("%v / %m iterations"));
    // The job's progress lines come every few iterations: the status says what the bar
    // shows, with the loss and rate of the job's last line.
    if (live && m_hasProgress) {
      for (const auto& m : run.metrics)
        if (m.name == "loss" && m.rank == 0 && m.iteration == last)
          m_progressLoss = tr(" · loss %1").arg(m.value, 0, 'f', 4);
      showProgress(last, total);
    }
  }
}

void LiveMonitor::clear() {
  for (Chart* c : {&m_loss, &m_rate, &m_iterationMs, &m_overlap}) {
    for (auto& [key, s] : c->series)
      s->clear();
  }
  m_progress->setValue(0);
  m_lastIteration = 0;
  m_hasProgress = false;
}

const LiveMonitor::Chart* LiveMonitor::chartNamed(const QString& chart) const {
  return chart == QLatin1String("loss")        ? &m_loss
         : chart == QLatin1String("samples")   ? &m_rate
         : chart == QLatin1String("iteration") ? &m_iterationMs
         : chart == QLatin1String("overlap")   ? &m_overlap
                                               : nullptr;
}

QValueAxis* LiveMonitor::axis(const QString& chart, Qt::Orientation o) const {
  const Chart* c = chartNamed(chart);
  if (!c) return nullptr;
  return o == Qt::Horizontal ? c->x : c->y;
}

QString LiveMonitor::monitorTitle(const QString& chart) const {
  const Chart* c = chartNamed(chart);
  return c ? c->view->chart()->title() : QString();
}

int LiveMonitor::pointCount(const QString& chart) const {
  const Chart* c = chartNamed(chart);
  if (!c) return -1;
  int n = 0;
  for (const auto& [key, s] : c->series)
    n += static_cast<int>(s->count());
  return n;
}

}  // namespace ddpscope::gui
