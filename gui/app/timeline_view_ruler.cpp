// TimelineView's ruler: rank 0's iterations in a band along the top, the selected range's
// length over them, and the time ticks below. Every label is placed here once, for the
// painter and for the tests alike, so that none is drawn over another or cut at an end.
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "ruler_ticks.h"
#include "time_format.h"
#include "timeline_view.h"

namespace ddpscope::gui {
namespace {

constexpr double kLabelGap = 4;  // the least space between two labels on the ruler

// The widest of `texts` (the longest first) that fits `room` with its gap, centred in it;
// empty when none fits.
TimelineView::RulerLabel fitted(const QFontMetrics& fm, const QRectF& room, const QStringList& texts) {
  for (const QString& text : texts) {
    const double w = fm.horizontalAdvance(text);
    if (w + kLabelGap < room.width()) return {QRectF(room.center().x() - w / 2, room.top(), w, room.height()), text};
  }
  return {};
}

}  // namespace

// The range's length, in the iterations' band over its middle: in the band of time
// labels it hid the ruler's numbers where the user reads the range's ends.
QRectF TimelineView::rangeBadgeRect() const {
  if (m_rangeEnd <= m_rangeBegin) return {};
  const double a = std::clamp(m_axis.toPx(m_rangeBegin), -1.0, m_axis.width_px + 1);
  const double b = std::clamp(m_axis.toPx(m_rangeEnd), -1.0, m_axis.width_px + 1);
  const QString text = QString::fromStdString(formatDuration(m_rangeEnd - m_rangeBegin));
  const QFontMetrics fm = fontMetrics();
  return {kLabelWidth + (a + b) / 2 - fm.horizontalAdvance(text) / 2.0 - 4, 1.0, fm.horizontalAdvance(text) + 8.0,
          kIterationBand - 2.0};
}

std::vector<std::pair<QRectF, int64_t>> TimelineView::iterationBands() const {
  std::vector<std::pair<QRectF, int64_t>> bands;
  const double w = std::floor(m_axis.width_px);
  const auto& its = m_data->iterations;
  auto it = std::lower_bound(its.begin(), its.end(), m_axis.begin_ns,
                             [](const TimelineIteration& i, int64_t t) { return i.second < t; });
  for (; it != its.end() && it->first <= m_axis.end_ns; ++it) {
    const double a = std::max(0.0, m_axis.toPx(it->first));
    const double b = std::min(w, m_axis.toPx(it->second));
    if (b - a >= 1) bands.emplace_back(QRectF(kLabelWidth + a, 1, b - a, kIterationBand - 2), it->number);
  }
  return bands;
}

std::vector<TimelineView::RulerLabel> TimelineView::rulerLabels() const {
  std::vector<RulerLabel> labels;
  const QFontMetrics fm = fontMetrics();
  // An iteration's number, centred in its band; where the range's length sits over it,
  // beside the length on the side with room, or left out (the band still shows it).
  const QRectF badge = rangeBadgeRect();
  for (const auto& [band, number] : iterationBands()) {
    const QStringList texts{tr("iteration %1").arg(number), QString::number(number)};
    RulerLabel label = fitted(fm, band, texts);
    if (!label.text.isEmpty() && label.rect.intersects(badge)) {
      const QRectF left(band.left(), band.top(), badge.left() - band.left(), band.height());
      const QRectF right(badge.right(), band.top(), band.right() - badge.right(), band.height());
      label = fitted(fm, left.width() >= right.width() ? left : right, texts);
    }
    if (!label.text.isEmpty()) labels.push_back(label);
  }
  // The ticks' times, each right of its tick; the last one's left of it where it would
  // pass the axis' end ("5.0 s" was cut at the run's end), the time before it left out
  // where the two would touch: the end's time is the one read there.
  const RulerTicks ticks = rulerTicks(
      m_axis, m_data->begin_ns, [&](const std::string& s) { return fm.horizontalAdvance(QString::fromStdString(s)); });
  const double right = kLabelWidth + std::floor(m_axis.width_px);
  const size_t firstTime = labels.size();
  const auto touchesLast = [&](const QRectF& rect) {
    return labels.size() > firstTime && rect.left() < labels.back().rect.right() + kLabelGap;
  };
  for (const RulerTick& t : ticks.ticks) {
    const QString text = QString::fromStdString(t.label);
    const double x = kLabelWidth + static_cast<int>(t.x), w = fm.horizontalAdvance(text);
    QRectF rect(x + 3, kTop - 6 - fm.ascent(), w, fm.height());
    if (rect.right() > right) {
      rect.moveRight(x - 3);
      while (touchesLast(rect))
        labels.pop_back();
    }
    if (rect.left() >= kLabelWidth && !touchesLast(rect)) labels.push_back({rect, text});
  }
  return labels;
}

void TimelineView::paintRuler(QPainter& p) {
  const int x0 = kLabelWidth;
  const int w = static_cast<int>(m_axis.width_px);
  p.fillRect(QRect(0, 0, width(), kTop), palette().window());
  // Iterations of rank 0 in view, alternately shaded.
  for (const auto& [band, number] : iterationBands())
    p.fillRect(band, number % 2 ? palette().color(QPalette::Midlight) : palette().color(QPalette::Button));
  // Time ticks: the step grows until labels, as measured, never touch.
  const QFontMetrics fm = p.fontMetrics();
  const RulerTicks ticks = rulerTicks(
      m_axis, m_data->begin_ns, [&](const std::string& s) { return fm.horizontalAdvance(QString::fromStdString(s)); });
  p.setPen(palette().color(QPalette::Mid));
  for (const RulerTick& t : ticks.ticks) {
    const int x = x0 + static_cast<int>(t.x);
    p.drawLine(x, kIterationBand + 2, x, height());
  }
  p.setPen(palette().color(QPalette::WindowText));
  p.setClipRect(x0, 0, w, kTop);
  for (const RulerLabel& label : rulerLabels())
    p.drawText(label.rect, Qt::AlignCenter, label.text);
  p.setClipping(false);
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(0, kTop - 1, width(), kTop - 1);
}

}  // namespace ddpscope::gui
