#include "rank_overview_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <cmath>

namespace ddpscope::gui {
namespace {

constexpr int kLabelWidth = 150;  // rank labels (or host groups) on the left
constexpr int kTop = 24;          // iteration numbers
constexpr int kLegend = 40;       // the colour scale below

}  // namespace

RankOverviewView::RankOverviewView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(200);
}

void RankOverviewView::setOverview(RankOverview overview) {
  m_overview = std::move(overview);
  rebuildImage();
  update();
}

QRect RankOverviewView::mapRect() const {
  return QRect(kLabelWidth, kTop, std::max(1, width() - kLabelWidth - 8), std::max(1, height() - kTop - kLegend));
}

QColor RankOverviewView::colorOf(double value, double low, double high) {
  if (std::isnan(value)) return QColor(0xee, 0xee, 0xee);
  const double t = high > low ? std::clamp((value - low) / (high - low), 0.0, 1.0) : 0.0;
  // Pale yellow to dark red through orange (a sequential scale that reads in grey too).
  const QColor a(0xff, 0xf5, 0xc0), m(0xf0, 0x8a, 0x24), b(0x9e, 0x0b, 0x0b);
  const auto mix = [](const QColor& x, const QColor& y, double f) {
    return QColor::fromRgbF(static_cast<float>(x.redF() + (y.redF() - x.redF()) * f),
                            static_cast<float>(x.greenF() + (y.greenF() - x.greenF()) * f),
                            static_cast<float>(x.blueF() + (y.blueF() - x.blueF()) * f));
  };
  return t < 0.5 ? mix(a, m, t * 2) : mix(m, b, (t - 0.5) * 2);
}

size_t RankOverviewView::focusRows() const {
  const size_t n = m_overview.rows.size();
  const int h = mapRect().height();
  if (static_cast<double>(n) * 3 <= h) return 0;
  return std::min(n, static_cast<size_t>(std::max(1, h / 3 / kFocusRow)));
}

double RankOverviewView::restRowHeight() const {
  const size_t n = m_overview.rows.size(), focus = focusRows();
  const double left = mapRect().height() - static_cast<double>(focus) * kFocusRow;
  return n > focus ? left / static_cast<double>(n - focus) : 0;
}

double RankOverviewView::rowTop(size_t i) const {
  const size_t focus = focusRows();
  const double top = mapRect().top();
  if (focus == 0)
    return top + static_cast<double>(i) * mapRect().height() / static_cast<double>(m_overview.rows.size());
  if (i <= focus) return top + static_cast<double>(i) * kFocusRow;
  return top + static_cast<double>(focus) * kFocusRow + static_cast<double>(i - focus) * restRowHeight();
}

std::pair<size_t, size_t> RankOverviewView::rowsAt(int y) const {
  const size_t n = m_overview.rows.size();
  // The rows whose extent meets [y, y + 1): found from the layout's two bands.
  const auto rowOf = [&](double at) -> size_t {
    const size_t focus = focusRows();
    const double top = mapRect().top();
    if (focus == 0) return static_cast<size_t>((at - top) * static_cast<double>(n) / mapRect().height());
    if (at < top + static_cast<double>(focus) * kFocusRow) return static_cast<size_t>((at - top) / kFocusRow);
    const double rest = restRowHeight();
    return focus + static_cast<size_t>((at - top - static_cast<double>(focus) * kFocusRow) / std::max(rest, 1e-9));
  };
  const size_t first = std::min(rowOf(y), n);
  size_t last = std::min(rowOf(y + 1 - 1e-9) + 1, n);
  return {first, std::max(last, std::min(first + 1, n))};
}

std::pair<size_t, size_t> RankOverviewView::columnsAt(int x) const {
  const QRect r = mapRect();
  const size_t n = m_overview.iterations.size();
  const auto first = static_cast<size_t>(static_cast<double>(x - r.left()) * static_cast<double>(n) / r.width());
  const auto last = static_cast<size_t>(static_cast<double>(x - r.left() + 1) * static_cast<double>(n) / r.width());
  return {std::min(first, n), std::min(std::max(last, first + 1), n)};
}

void RankOverviewView::rebuildImage() {
  const QRect r = mapRect();
  m_image = QImage(r.size(), QImage::Format_RGB32);
  m_image.fill(palette().color(QPalette::Base));
  if (m_overview.rows.empty() || m_overview.iterations.empty()) return;
  // Per pixel: the largest value of the cells it covers (a straggler is never averaged
  // away). Cells are computed once per pixel column band and row band.
  std::vector<std::pair<size_t, size_t>> columns(static_cast<size_t>(r.width()));
  for (int x = 0; x < r.width(); ++x)
    columns[static_cast<size_t>(x)] = columnsAt(r.left() + x);
  // The scale in 256 steps: a colour per pixel without mixing colours per pixel.
  QRgb lut[256];
  for (int i = 0; i < 256; ++i)
    lut[i] = colorOf(i / 255.0, 0, 1).rgb();
  const QRgb none = colorOf(std::nan(""), 0, 1).rgb();
  const double low = m_overview.low_ms, span = std::max(1e-12, m_overview.high_ms - m_overview.low_ms);
  for (int y = 0; y < r.height(); ++y) {
    const auto [r0, r1] = rowsAt(r.top() + y);
    auto* line = reinterpret_cast<QRgb*>(m_image.scanLine(y));
    for (int x = 0; x < r.width(); ++x) {
      const auto [c0, c1] = columns[static_cast<size_t>(x)];
      float best = std::numeric_limits<float>::quiet_NaN();
      for (size_t row = r0; row < r1; ++row)
        for (size_t c = c0; c < c1; ++c) {
          const float v = m_overview.at(row, c);
          if (!std::isnan(v) && (std::isnan(best) || v > best)) best = v;
        }
      line[x] = std::isnan(best) ? none : lut[static_cast<int>(std::clamp((best - low) / span, 0.0, 1.0) * 255)];
    }
  }
}

void RankOverviewView::resizeEvent(QResizeEvent*) { rebuildImage(); }

std::vector<size_t> RankOverviewView::labelledRows() const {
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  const double text = QFontMetrics(small).height();
  std::vector<size_t> rows;
  double nextFree = mapRect().top() - text;  // a first label may reach above the map
  for (size_t i = 0; i < m_overview.rows.size(); ++i) {
    // The label is one line of text centred on its row: it needs that line free, not the
    // row's whole height plus a margin (which left every other tall row unlabelled).
    const double centre = (rowTop(i) + rowTop(i + 1)) / 2, top = centre - text / 2;
    if (top < nextFree) continue;
    rows.push_back(i);
    nextFree = top + text + 1;
  }
  return rows;
}

void RankOverviewView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRect r = mapRect();
  if (m_overview.rows.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No iterations recorded: the overview needs a DDP training run."));
    return;
  }
  p.drawImage(r.topLeft(), m_image);
  p.setPen(palette().color(QPalette::Text));
  const QFontMetrics fm = p.fontMetrics();
  // Iteration numbers along the top, as many as fit.
  const size_t n = m_overview.iterations.size();
  const int every = std::max<int>(1, static_cast<int>(std::ceil(60.0 * static_cast<double>(n) / r.width())));
  for (size_t c = 0; c < n; c += static_cast<size_t>(every)) {
    const int x = r.left() + static_cast<int>((static_cast<double>(c) + 0.5) * r.width() / static_cast<double>(n));
    p.drawText(QRect(x - 30, 4, 60, kTop - 6), Qt::AlignCenter, QString::number(m_overview.iterations[c]));
  }
  // Rank labels: every row with room for one, else every k-th; never two overlapping.
  QFont small = p.font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  p.setFont(small);
  const QFontMetrics sm(small);
  for (const size_t i : labelledRows()) {
    const double y = rowTop(i), h = rowTop(i + 1) - y;
    const OverviewRow& row = m_overview.rows[i];
    QString label = tr("rank %1").arg(row.rank);
    if (!row.host.empty() && h >= sm.height() - 2) label += tr(" · %1").arg(QString::fromStdString(row.host));
    p.drawText(QRectF(4, y + h / 2 - sm.height() / 2.0, kLabelWidth - 8, sm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               sm.elidedText(label, Qt::ElideRight, kLabelWidth - 8));
  }
  p.setFont(QFont());
  p.setPen(palette().color(QPalette::Dark));
  if (const size_t focus = focusRows(); focus > 0 && focus < m_overview.rows.size()) {
    // Where the rows kept large end: the others are squeezed below.
    const int y = static_cast<int>(rowTop(focus));
    p.drawLine(r.left() - 8, y, r.right(), y);
  }
  for (const auto& g : m_overview.groups) {
    const int y = static_cast<int>(rowTop(g.first));
    p.drawLine(r.left() - 60, y, r.right(), y);
  }
  // The colour scale.
  const QRect bar(r.left(), r.bottom() + 14, std::min(300, r.width()), 10);
  for (int x = 0; x < bar.width(); ++x)
    p.fillRect(QRect(bar.left() + x, bar.top(), 1, bar.height()), colorOf(static_cast<double>(x) / bar.width(), 0, 1));
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QRect(4, bar.top() - 3, kLabelWidth - 8, 16), Qt::AlignLeft | Qt::AlignVCenter,
             tr(metricLabel(m_overview.metric)));
  p.drawText(
      bar.right() + 8, bar.bottom(),
      tr("%1 ms to %2 ms; grey: no iteration").arg(m_overview.low_ms, 0, 'f', 2).arg(m_overview.high_ms, 0, 'f', 2));
}

std::pair<int, int> RankOverviewView::cellAt(QPoint pos) const {
  const QRect r = mapRect();
  if (!r.contains(pos) || m_overview.rows.empty() || m_overview.iterations.empty()) return {-1, -1};
  const auto [r0, r1] = rowsAt(pos.y());
  const auto [c0, c1] = columnsAt(pos.x());
  std::pair<int, int> best{-1, -1};
  float most = -1;
  for (size_t row = r0; row < r1; ++row)
    for (size_t c = c0; c < c1; ++c) {
      const float v = m_overview.at(row, c);
      if (best.first < 0 || (!std::isnan(v) && v > most)) {
        best = {static_cast<int>(row), static_cast<int>(c)};
        if (!std::isnan(v)) most = v;
      }
    }
  return best;
}

QPoint RankOverviewView::pointOf(size_t row, size_t column) const {
  const QRect r = mapRect();
  return {r.left() + static_cast<int>((static_cast<double>(column) + 0.5) * r.width() /
                                      static_cast<double>(m_overview.iterations.size())),
          static_cast<int>((rowTop(row) + rowTop(row + 1)) / 2)};
}

void RankOverviewView::mouseReleaseEvent(QMouseEvent* event) {
  const auto [row, column] = cellAt(event->pos());
  if (row < 0) return;
  emit cellClicked(m_overview.rows[static_cast<size_t>(row)].rank, m_overview.iterations[static_cast<size_t>(column)]);
}

bool RankOverviewView::event(QEvent* event) {
  if (event->type() != QEvent::ToolTip) return QWidget::event(event);
  auto* help = static_cast<QHelpEvent*>(event);
  const auto [row, column] = cellAt(help->pos());
  if (row < 0) {
    QToolTip::hideText();
    return true;
  }
  const OverviewRow& r = m_overview.rows[static_cast<size_t>(row)];
  const float v = m_overview.at(static_cast<size_t>(row), static_cast<size_t>(column));
  QString text = tr("rank %1").arg(r.rank);
  if (!r.host.empty()) text += tr(" on %1").arg(QString::fromStdString(r.host));
  text += tr(" · iteration %1: ").arg(m_overview.iterations[static_cast<size_t>(column)]);
  text += std::isnan(v) ? tr("none recorded") : tr("%1 ms").arg(static_cast<double>(v), 0, 'f', 2);
  text += tr(" (its mean %1 ms; the median rank's %2 ms). Click: the timeline there.")
              .arg(r.mean_ms, 0, 'f', 2)
              .arg(m_overview.median_rank_mean_ms, 0, 'f', 2);
  QToolTip::showText(help->globalPos(), text, this);
  return true;
}

}  // namespace ddpscope::gui
