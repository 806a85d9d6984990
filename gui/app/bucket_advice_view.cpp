#include "bucket_advice_view.h"

#include <QChart>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <exception>
#include <optional>

#include "chart_axis.h"
#include "chart_theme.h"
#include "chart_title.h"
#include "plural.h"
#include "kind_colors.h"
#include "run_store_reader.h"
#include "user_message.h"

namespace ddpscope::gui {

BucketAdviceView::BucketAdviceView(QWidget* parent) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(200);
  draw(tr("Open a DDP training run to see its bucket advice."));
}

QString BucketAdviceView::title() const { return m_title; }

void BucketAdviceView::setRun(const std::string& path, int64_t spans, int rank, probes::RunStoreReader* reader) {
  const bool same = path == m_path && rank == m_rank;
  if (same && (spans == m_spans || (m_since.isValid() && m_since.elapsed() < 5000))) return;
  m_path = path;
  m_rank = rank;
  m_spans = spans;
  m_since.start();
  try {
    std::optional<probes::RunStoreReader> own;
    if (!reader) reader = &own.emplace(path);
    m_advice = probes::advise_buckets(*reader, {}, rank);
    draw({});
  } catch (const std::exception& e) {
    m_advice = {};
    draw(tr("No bucket advice for this run: %1").arg(userMessage(e)));
  }
}

void BucketAdviceView::draw(const QString& error) {
  auto* chart = new QChart;
  applyChartTheme(chart, palette());
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignRight);
  QString title = error;
  if (error.isEmpty() && !m_advice.predictions.empty()) {
    const auto [lo, hi] = addSeries(chart);
    addAxes(chart, lo, hi);
    title = adviceTitle();
  }
  QChart* old = this->chart();
  setChart(chart);
  delete old;
  m_title = title;
  setWrappedTitle(this, title);
}

// The predictions per cap, the run's measured point and the best caps. Returns the
// range of times drawn.
std::pair<double, double> BucketAdviceView::addSeries(QChart* chart) {
  auto* predicted = new QLineSeries;
  predicted->setName(tr("predicted iteration"));
  auto* fused = new QLineSeries;
  fused->setName(QString::fromStdString(probes::fused_variant_name(m_advice)));
  auto* recorded = new QScatterSeries;
  recorded->setName(tr("this run's cap, measured"));
  auto* best = new QScatterSeries;
  best->setName(tr("best predicted"));
  double lo = 1e300, hi = 0;
  const auto span = [&](double ms) {
    lo = std::min(lo, ms);
    hi = std::max(hi, ms);
  };
  for (const auto& p : m_advice.predictions) {
    predicted->append(p.cap_mb, p.iteration_ms);
    fused->append(p.cap_mb, p.fused_iteration_ms);
    span(p.iteration_ms);
    if (!m_advice.zero) span(p.fused_iteration_ms);
    if (p.recorded) {
      recorded->append(p.cap_mb, p.measured_ms);
      span(p.measured_ms);
    }
    if (p.cap_mb == m_advice.best_cap_mb) best->append(p.cap_mb, p.iteration_ms);
    if (p.cap_mb == m_advice.best_fused_cap_mb && !m_advice.zero) best->append(p.cap_mb, p.fused_iteration_ms);
  }
  chart->addSeries(predicted);
  if (m_advice.zero) {  // ZeRO owns the step: the fused optimizer is no choice for this run
    delete fused;
    fused = nullptr;
  } else {
    chart->addSeries(fused);
  }
  chart->addSeries(recorded);
  chart->addSeries(best);
  predicted->setColor(kindColor(probes::Kind::Forward));
  QPen dashed(kindColor(probes::Kind::Optimizer));
  dashed.setStyle(Qt::DashLine);
  dashed.setWidthF(2);
  if (fused) fused->setPen(dashed);
  recorded->setColor(QColor(0xd6, 0x27, 0x28));
  recorded->setMarkerSize(11);
  best->setColor(kindColor(probes::Kind::Allreduce));
  best->setMarkerSize(9);
  return {lo, hi};
}

void BucketAdviceView::addAxes(QChart* chart, double lo, double hi) {
  auto* x = new QLogValueAxis;
  x->setBase(10);
  x->setLabelFormat(QStringLiteral("%g"));
  x->setMinorTickCount(-1);
  x->setTitleText(tr("bucket_cap_mb (MiB)"));
  x->setRange(m_advice.predictions.front().cap_mb * 0.8, m_advice.predictions.back().cap_mb * 1.25);
  auto* y = new QValueAxis;
  y->setTitleText(tr("iteration (ms)"));
  const double pad = std::max(1.0, (hi - lo) * 0.15);
  y->setRange(std::max(0.0, lo - pad), hi + pad);
  y->applyNiceNumbers();
  setReadableLabels(y);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
}

// The curve is anchored on the recorded run, so the run's point lies on it: the title
// gives the two best caps and what the run measured.
QString BucketAdviceView::adviceTitle() const {
  const auto at = [&](double cap) {
    return std::find_if(m_advice.predictions.begin(), m_advice.predictions.end(),
                        [cap](const auto& p) { return p.cap_mb == cap; });
  };
  const auto rec =
      std::find_if(m_advice.predictions.begin(), m_advice.predictions.end(), [](const auto& p) { return p.recorded; });
  // A ZeRO run owns its step: the fused optimizer is no choice for it.
  const QString fused = m_advice.zero ? QString()
                                      : tr("; %1 %2 MiB, %3 ms")
                                            .arg(QString::fromStdString(probes::fused_variant_name(m_advice)))
                                            .arg(m_advice.best_fused_cap_mb)
                                            .arg(at(m_advice.best_fused_cap_mb)->fused_iteration_ms, 0, 'f', 1);
  const QString kind = m_advice.zero ? tr(" (ZeRO)") : m_advice.recorded_fused ? tr(" fused") : QString();
  // The measured time is the median the predictions are anchored on, over the iterations
  // after the warm-up: said as such, it no longer reads as the Summary's mean over all.
  const QString best = m_advice.best_cap_mb == m_advice.recorded_cap_mb
                           ? tr("keep this run's cap (%1 MiB): no cap predicts 0.5% faster").arg(m_advice.best_cap_mb)
                           : tr("best cap %1 MiB, %2 ms (%3)")
                                 .arg(m_advice.best_cap_mb)
                                 .arg(at(m_advice.best_cap_mb)->iteration_ms, 0, 'f', 1)
                                 .arg(QString::fromStdString(probes::cap_setting(m_advice, m_advice.best_cap_mb)));
  // What limits the advice (a rough cost, a simulation far from the run) is said with it.
  QString notes;
  for (const auto& n : m_advice.notes)
    notes += QStringLiteral(" · ") + QString::fromStdString(n);
  return tr("Bucket advice (rank %1): %2%3. This run: %4 MiB%5, median %6 ms over its %7 after the "
            "warm-up%8%9")
      .arg(m_advice.rank)
      .arg(best)
      .arg(fused)
      .arg(m_advice.recorded_cap_mb)
      .arg(kind)
      .arg(rec != m_advice.predictions.end() ? rec->measured_ms : 0, 0, 'f', 1)
      .arg(countOf(m_advice.iterations, tr("iteration")))
      .arg(m_advice.cost.measured.size() >= 2 || m_advice.torch || notes.contains("--measure-allreduce")
               ? QString()
               : tr(" · record with train --measure-allreduce for a measured cost"))
      .arg(notes);
}

}  // namespace ddpscope::gui
