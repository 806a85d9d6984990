#include "ring_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <bit>

#include "ring_lesson.h"

namespace ddpscope::gui {
namespace {

constexpr int kRingLabelWidth = 64;
constexpr int kHeaderHeight = 22;

}  // namespace

RingView::RingView(QWidget* parent) : QWidget(parent) { setMinimumSize(200, 120); }

void RingView::setState(const LessonState& state, int ranks, const LessonStep* last) {
  m_state = state;
  m_ranks = ranks;
  m_hasLast = last != nullptr;
  if (last) m_last = *last;
  update();
}

QRect RingView::cellRect(int rank, int block) const {
  if (m_ranks <= 0 || rank < 0 || block < 0 || rank >= m_ranks || block >= m_ranks) return {};
  const int w = (width() - kRingLabelWidth - 8) / m_ranks, h = (height() - kHeaderHeight - 8) / m_ranks;
  return {kRingLabelWidth + block * w, kHeaderHeight + rank * h, w - 4, h - 4};
}

void RingView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (m_ranks <= 0 || m_state.holds.size() != static_cast<size_t>(m_ranks)) return;
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(palette().color(QPalette::Text));
  for (int b = 0; b < m_ranks; ++b) {
    const QRect c = cellRect(0, b);
    p.drawText(QRect(c.left(), 2, c.width(), kHeaderHeight - 4), Qt::AlignCenter, tr("block %1").arg(b));
  }
  const QColor full(0x2c, 0xa0, 0x2c), base(0x4c, 0x78, 0xa8);
  for (int r = 0; r < m_ranks; ++r) {
    const QRect row = cellRect(r, 0);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(4, row.top(), kRingLabelWidth - 8, row.height()), Qt::AlignVCenter | Qt::AlignLeft,
               tr("rank %1").arg(r));
    for (int b = 0; b < m_ranks; ++b) {
      const uint64_t holds = m_state.holds[static_cast<size_t>(r)][static_cast<size_t>(b)];
      const int count = std::popcount(holds);
      const QRect c = cellRect(r, b);
      // Lighter for one rank's own values, darker as the block sums more; green when whole.
      QColor fill = count == m_ranks ? full : base;
      fill.setAlphaF(0.15 + 0.75 * static_cast<double>(count) / m_ranks);
      p.fillRect(c, fill);
      p.setPen(QPen(palette().color(QPalette::Mid), 1));
      p.drawRect(c);
      p.setPen(count * 2 > m_ranks ? Qt::white : palette().color(QPalette::Text));
      p.drawText(c, Qt::AlignCenter, QString::fromStdString(ringHoldsText(holds, m_ranks)));
    }
  }
  if (!m_hasLast) return;
  // The step just taken: a send rings the block leaving, with an arrow to the next rank's
  // copy (dashed: not there yet); a receive, the block that arrived, from the rank before.
  const bool send = m_last.kind == StepKind::RingSend;
  const int block = send ? m_last.param : m_last.bucket;
  const QRect from = cellRect(send ? m_last.rank : m_last.peer, block);
  const QRect to = cellRect(send ? m_last.peer : m_last.rank, block);
  if (from.isEmpty() || to.isEmpty()) return;
  const QColor arrow(0xd6, 0x27, 0x28);
  p.setPen(QPen(arrow, 3));
  p.setBrush(Qt::NoBrush);
  p.drawRect(from.adjusted(1, 1, -1, -1));
  p.setPen(QPen(arrow, 2, Qt::DashLine));
  p.drawRect(to.adjusted(3, 3, -3, -3));
  const QPointF a(from.center().x() + from.width() * 0.3, from.center().y()),
      b(to.center().x() + to.width() * 0.3, to.center().y());
  QPainterPath path(a);
  const double bend = from.width() * 0.35;
  path.cubicTo(a + QPointF(bend, 0), b + QPointF(bend, 0), b);
  p.setPen(QPen(arrow, 2));
  p.drawPath(path);
  // The path comes into `b` leftwards: the head points left.
  const QPointF head[3] = {b, b + QPointF(9, -5), b + QPointF(9, 5)};
  p.setBrush(arrow);
  p.drawPolygon(head, 3);
}

void RingView::mousePressEvent(QMouseEvent* event) {
  for (int r = 0; r < m_ranks; ++r)
    for (int b = 0; b < m_ranks; ++b)
      if (cellRect(r, b).contains(event->position().toPoint())) {
        emit cellClicked(r, b);
        return;
      }
  QWidget::mousePressEvent(event);
}

}  // namespace ddpscope::gui
