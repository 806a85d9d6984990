#include "link_matrix_view.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <cmath>

#include "rank_overview_view.h"

namespace ddpscope::gui {
namespace {

constexpr int kLabelWidth = 90;   // senders' labels, left of the map
constexpr int kLabelHeight = 34;  // receivers' labels and the axis title, above it
constexpr int kLegendHeight = 34;

}  // namespace

LinkMatrixView::LinkMatrixView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(240, 200);
}

void LinkMatrixView::setGrid(LinkGrid grid, std::shared_ptr<const probes::LinkReport> report) {
  m_grid = std::move(grid);
  m_report = std::move(report);
  rebuildImage();
  update();
}

QRect LinkMatrixView::mapRect() const {
  const int side = std::max(0, std::min(width() - kLabelWidth - 8, height() - kLabelHeight - kLegendHeight - 8));
  return {kLabelWidth, kLabelHeight, side, side};
}

std::pair<size_t, size_t> LinkMatrixView::cellsAt(int pixel, int length) const {
  const size_t n = m_grid.size();
  if (length <= 0 || n == 0) return {0, 0};
  const auto first = static_cast<size_t>(static_cast<double>(pixel) * static_cast<double>(n) / length);
  auto last = static_cast<size_t>(static_cast<double>(pixel + 1) * static_cast<double>(n) / length);
  last = std::clamp(last, std::min(first + 1, n), n);
  return {std::min(first, n), last};
}

std::pair<int, int> LinkMatrixView::cellAt(QPoint pos) const {
  const QRect map = mapRect();
  if (!map.contains(pos) || m_grid.size() == 0) return {-1, -1};
  const auto [r0, r1] = cellsAt(pos.y() - map.top(), map.height());
  const auto [c0, c1] = cellsAt(pos.x() - map.left(), map.width());
  if (r0 >= r1 || c0 >= c1) return {-1, -1};
  // Where a pixel covers several cells: the one whose value it shows.
  const float shown = m_grid.pooled(r0, r1, c0, c1);
  for (size_t r = r0; r < r1; ++r)
    for (size_t c = c0; c < c1; ++c)
      if (m_grid.at(r, c) == shown) return {static_cast<int>(r), static_cast<int>(c)};
  return {static_cast<int>(r0), static_cast<int>(c0)};
}

QPoint LinkMatrixView::pointOf(size_t src, size_t dst) const {
  const QRect map = mapRect();
  const double cell = static_cast<double>(map.width()) / static_cast<double>(std::max<size_t>(1, m_grid.size()));
  return {map.left() + static_cast<int>((static_cast<double>(dst) + 0.5) * cell),
          map.top() + static_cast<int>((static_cast<double>(src) + 0.5) * cell)};
}

// Each pixel row first takes the worst shade of its cell rows, column by column; each pixel
// then the worst of its columns in that: every cell is read once (a million links: 40 ms a
// rebuild pooling each pixel's block whole with a logarithm a pixel, bench_link_matrix).
void LinkMatrixView::rebuildImage() {
  const QRect map = mapRect();
  const size_t n = m_grid.size();
  if (map.width() <= 0 || n == 0) {
    m_image = QImage();
    return;
  }
  m_image = QImage(map.size(), QImage::Format_RGB32);
  QRgb lut[256];
  lut[0] = palette().color(QPalette::Base).darker(104).rgb();  // no link
  for (int i = 1; i < 256; ++i)
    lut[i] = RankOverviewView::colorOf((i - 1) / 254.0, 0, 1).rgb();
  std::vector<std::pair<size_t, size_t>> columns;
  for (int x = 0; x < map.width(); ++x)
    columns.push_back(cellsAt(x, map.width()));
  std::vector<uint8_t> worst(n);
  for (int y = 0; y < map.height(); ++y) {
    const auto [r0, r1] = cellsAt(y, map.height());
    std::fill(worst.begin(), worst.end(), uint8_t{0});
    for (size_t r = r0; r < r1; ++r) {
      const uint8_t* row = &m_grid.shades[r * n];
      for (size_t c = 0; c < n; ++c)
        worst[c] = std::max(worst[c], row[c]);
    }
    auto* line = reinterpret_cast<QRgb*>(m_image.scanLine(y));
    for (int x = 0; x < map.width(); ++x) {
      const auto [c0, c1] = columns[static_cast<size_t>(x)];
      uint8_t shade = 0;
      for (size_t c = c0; c < c1; ++c)
        shade = std::max(shade, worst[c]);
      line[x] = lut[shade];
    }
  }
}

void LinkMatrixView::resizeEvent(QResizeEvent*) { rebuildImage(); }

void LinkMatrixView::paintLabels(QPainter& p, const QRect& map) {
  const size_t n = m_grid.size();
  const QFontMetrics fm(font());
  const double cell = static_cast<double>(map.height()) / static_cast<double>(n);
  const auto every = static_cast<size_t>(std::max(1.0, std::ceil((fm.height() + 2) / std::max(cell, 1e-9))));
  p.setPen(palette().color(QPalette::WindowText));
  for (size_t i = 0; i < n; i += every) {
    const int y = map.top() + static_cast<int>((static_cast<double>(i) + 0.5) * cell);
    const QString label = fm.elidedText(QString::fromStdString(m_grid.labels[i]), Qt::ElideMiddle, kLabelWidth - 8);
    p.drawText(QRect(0, y - fm.height() / 2, kLabelWidth - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter, label);
  }
  // Across, fewer: a label is as wide as its text.
  const int widest =
      fm.horizontalAdvance(m_grid.level == LinkLevel::Ranks ? QStringLiteral("0000") : QStringLiteral("ddps-h00"));
  const auto acrossEvery = static_cast<size_t>(std::max(1.0, std::ceil((widest + 6) / std::max(cell, 1e-9))));
  for (size_t i = 0; i < n; i += acrossEvery) {
    const int x = map.left() + static_cast<int>((static_cast<double>(i) + 0.5) * cell);
    const QString label = fm.elidedText(QString::fromStdString(m_grid.labels[i]), Qt::ElideMiddle, widest + 4);
    p.drawText(QRect(x - widest, map.top() - fm.height() - 2, 2 * widest, fm.height()), Qt::AlignCenter, label);
  }
  const QString what = m_grid.level == LinkLevel::Ranks ? tr("rank") : tr("host");
  p.drawText(QRect(map.left(), 0, map.width(), fm.height()), Qt::AlignLeft,
             tr("to %1 →   (rows: from %1 ↓)").arg(what));
}

// Each cell's value in it, when cells are wide enough for the text (a few dozen ranks or hosts).
void LinkMatrixView::paintValues(QPainter& p, const QRect& map) {
  const size_t n = m_grid.size();
  const double cell = static_cast<double>(map.width()) / static_cast<double>(n);
  const QFontMetrics fm(font());
  if (cell < fm.horizontalAdvance(QStringLiteral("1.88 Gbit/s")) + 6) return;
  for (size_t r = 0; r < n; ++r) {
    for (size_t c = 0; c < n; ++c) {
      const float v = m_grid.at(r, c);
      if (std::isnan(v)) continue;
      const QRectF box(map.left() + static_cast<double>(c) * cell, map.top() + static_cast<double>(r) * cell, cell,
                       cell);
      p.setPen(m_grid.badness(v) > 0.6 ? Qt::white : Qt::black);
      p.drawText(box, Qt::AlignCenter, QString::fromStdString(linkValueText(m_grid, v)));
    }
  }
}

void LinkMatrixView::paintLegend(QPainter& p, const QRect& map) {
  const QFontMetrics fm(font());
  const int y = map.bottom() + 10;
  const int w = std::min(map.width(), 260);
  for (int x = 0; x < w; ++x) {
    p.setPen(RankOverviewView::colorOf(static_cast<double>(x) / std::max(1, w - 1), 0, 1));
    p.drawLine(map.left() + x, y, map.left() + x, y + 10);
  }
  p.setPen(palette().color(QPalette::WindowText));
  // Pale is the fast (or least) end, dark the slow (or most).
  const double pale = m_grid.isRate() ? m_grid.high : m_grid.low, dark = m_grid.isRate() ? m_grid.low : m_grid.high;
  const QString text =
      tr("%1 … %2   (%3; grey: none)")
          .arg(QString::fromStdString(linkValueText(m_grid, pale)), QString::fromStdString(linkValueText(m_grid, dark)),
               tr(linkMeasureLabel(m_grid.measure)));
  p.drawText(QRect(map.left(), y + 12, width() - map.left(), fm.height() + 2), Qt::AlignLeft, text);
}

void LinkMatrixView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Window));
  const QRect map = mapRect();
  if (m_grid.size() == 0 || map.width() <= 0) return;
  if (m_image.size() != map.size()) rebuildImage();
  p.drawImage(map.topLeft(), m_image);
  paintValues(p, map);
  paintLabels(p, map);
  paintLegend(p, map);
}

bool LinkMatrixView::event(QEvent* event) {
  if (event->type() != QEvent::ToolTip) return QWidget::event(event);
  auto* help = static_cast<QHelpEvent*>(event);
  const auto [src, dst] = cellAt(help->pos());
  if (src < 0 || !m_report) {
    QToolTip::hideText();
    return true;
  }
  QToolTip::showText(
      help->globalPos(),
      QString::fromStdString(linkCellText(*m_report, m_grid, static_cast<size_t>(src), static_cast<size_t>(dst))),
      this);
  return true;
}

}  // namespace ddpscope::gui
