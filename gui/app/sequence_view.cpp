#include "sequence_view.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_set>

#include "time_ruler.h"

namespace ddpscope::gui {

QColor SequenceView::colorOf(ArrowKind kind) {
  switch (kind) {
    case ArrowKind::Request: return QColor(0x4c, 0x78, 0xa8);
    case ArrowKind::Response: return QColor(0x76, 0xb7, 0xb2);
    case ArrowKind::Error: return QColor(0xd6, 0x27, 0x28);
    case ArrowKind::Gradient: return QColor(0xf5, 0x85, 0x18);
    case ArrowKind::RRef: return QColor(0xb2, 0x79, 0xa2);
    case ArrowKind::Internal:
    default: return QColor(0xa0, 0xa0, 0xa0);
  }
}

namespace {

// Distance from `p` to the segment `l`.
double distanceTo(const QLineF& l, QPointF p) {
  const QPointF d = l.p2() - l.p1();
  const double len2 = d.x() * d.x() + d.y() * d.y();
  double t = len2 > 0 ? ((p.x() - l.x1()) * d.x() + (p.y() - l.y1()) * d.y()) / len2 : 0;
  t = std::clamp(t, 0.0, 1.0);
  const QPointF q = l.p1() + t * d;
  return std::hypot(p.x() - q.x(), p.y() - q.y());
}

// With more arrows in view than pixel columns, one arrow per (pixel column of its start,
// sender, receiver, kind): more would paint over each other.
class ArrowMerger {
 public:
  ArrowMerger(const TimeAxis& axis, int workers, size_t arrows)
      : axis_(axis), merging_(arrows > static_cast<size_t>(axis.width_px)) {
    // Very crowded (tens of messages per pixel): merge over 2 or 3 pixel columns; the
    // lines of one sender, receiver and kind lie side by side there anyway, and the
    // raster engine costs about 2 us a line (bench_sequence: the whole-run frame of 100k
    // messages).
    const double per_px = static_cast<double>(arrows) / std::max(1.0, axis.width_px);
    column_px_ = per_px > 48 ? 3 : per_px > 16 ? 2 : 1;
    const auto columns = static_cast<size_t>(axis.width_px / column_px_) + 2;
    workers_ = static_cast<size_t>(std::max(1, workers));
    // A bit per cell already drawn; a hash set when that would be large (many workers).
    const size_t cells = columns * workers_ * workers_ * kNumArrowKinds;
    flat_ = merging_ && cells <= (size_t{1} << 24);
    taken_flat_.resize(flat_ ? cells : 0);
  }
  bool merging() const { return merging_; }
  // False: an arrow drawn already stands for this one.
  bool take(const SequenceArrow& a) {
    if (!merging_) return true;
    const auto column =
        static_cast<size_t>((std::clamp(axis_.toPx(a.startNs()), -1.0, axis_.width_px) + 1) / column_px_);
    const size_t cell =
        ((column * workers_ + static_cast<size_t>(a.src)) * workers_ + static_cast<size_t>(a.dst)) * kNumArrowKinds +
        static_cast<size_t>(a.kind);
    if (!flat_) return taken_hashed_.insert(cell).second;
    if (taken_flat_[cell]) return false;
    taken_flat_[cell] = true;
    return true;
  }

 private:
  const TimeAxis& axis_;
  bool merging_, flat_ = false;
  double column_px_ = 1;
  size_t workers_ = 1;
  std::vector<bool> taken_flat_;
  std::unordered_set<uint64_t> taken_hashed_;
};

}  // namespace

SequenceView::SequenceView(QWidget* parent)
    : TimeAxisWidget(kLabelWidth, 8, parent), m_data(std::make_shared<const SequenceData>()) {
  setFocusPolicy(Qt::StrongFocus);
  setMinimumHeight(kTop + 120);
}

void SequenceView::setData(std::shared_ptr<const SequenceData> data) {
  m_data = std::move(data);
  m_selected = -1;
  fitAll();
}

void SequenceView::updateData(std::shared_ptr<const SequenceData> data) {
  const bool following = m_data->arrows.empty() || m_axis.end_ns >= m_data->end_ns;
  m_data = std::move(data);
  if (m_selected >= static_cast<int>(m_data->arrows.size())) m_selected = -1;
  if (following) {
    fitAll();
  } else {
    update();
  }
}

void SequenceView::setFilter(const SequenceFilter& filter) {
  m_filter = filter;
  if (m_selected >= 0 && !m_filter.accepts(m_data->arrows[static_cast<size_t>(m_selected)])) m_selected = -1;
  update();
}

void SequenceView::fitAll() {
  m_axis.width_px = plotWidth();
  m_axis.fit(m_data->begin_ns, std::max(m_data->end_ns, m_data->begin_ns + TimeAxis::kMinSpanNs));
  update();
}

void SequenceView::select(int arrow) {
  m_selected = arrow >= 0 && arrow < static_cast<int>(m_data->arrows.size()) ? arrow : -1;
  update();
  if (m_selected < 0) return;
  const SequenceArrow& a = m_data->arrows[static_cast<size_t>(m_selected)];
  emit arrowSelected(QString::fromStdString(describeArrow(*m_data, a)), a.src, a.t_send_ns, a.dst, a.t_recv_ns);
}

int SequenceView::laneY(int worker) const {
  const int n = std::max(1, m_data->workers);
  const int spacing = std::max(36, (height() - kTop - 16) / n);
  return kTop + 8 + worker * spacing + spacing / 2;
}

QLineF SequenceView::lineOf(const SequenceArrow& a) const {
  const double x0 = kLabelWidth;
  const double xs = a.t_send_ns >= 0 ? x0 + m_axis.toPx(a.t_send_ns) : x0 + m_axis.toPx(a.t_recv_ns) - 12;
  const double xr = a.t_recv_ns >= 0 ? x0 + m_axis.toPx(a.t_recv_ns)
                    : m_now >= 0     ? x0 + m_axis.toPx(m_now)
                                     : width() - 4;
  return QLineF(xs, laneY(a.src), xr, laneY(a.dst));
}

void SequenceView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  paintLanes(p);
  p.setClipRect(kLabelWidth, kTop, width() - kLabelWidth, height() - kTop);
  paintArrows(p);
  if (m_selected >= 0) {
    const SequenceArrow& a = m_data->arrows[static_cast<size_t>(m_selected)];
    QPen pen(colorOf(a.kind), 3);
    if (a.t_recv_ns < 0) pen.setStyle(Qt::DashLine);
    p.setPen(pen);
    p.drawLine(lineOf(a));
  }
}

// The time ruler and a labelled line per worker.
void SequenceView::paintLanes(QPainter& p) {
  const int x0 = kLabelWidth;
  paintTimeRuler(p, m_axis, m_data->origin(), x0, kTop, height(), palette().color(QPalette::Mid));
  for (int w = 0; w < m_data->workers; ++w) {
    const int y = laneY(w);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(4, y - 10, kLabelWidth - 8, 20), Qt::AlignVCenter | Qt::AlignLeft,
               QStringLiteral("worker %1").arg(w));
    p.setPen(QPen(palette().color(QPalette::Mid), 1));
    p.drawLine(x0, y, width(), y);
  }
}

void SequenceView::paintArrows(QPainter& p) {
  const auto [first, last] = m_data->window(m_axis.begin_ns, m_axis.end_ns);
  ArrowMerger merger(m_axis, m_data->workers, last - first);
  // Smooth lines and heads while they can be told apart: an antialiased line costs about
  // 20 us here, a plain one a few (bench_sequence: 7.5k arrows in one frame).
  const bool detailed = !merger.merging() && last - first <= 2000;
  p.setRenderHint(QPainter::Antialiasing, detailed);
  // Lines are batched per kind and style: one pen change per batch, not per arrow.
  std::array<std::vector<QLineF>, 2 * kNumArrowKinds> batches;
  std::vector<std::pair<QLineF, ArrowKind>> heads;
  m_drawn = 0;
  for (size_t i = first; i < last; ++i) {
    const SequenceArrow& a = m_data->arrows[i];
    if (!m_filter.accepts(a)) continue;
    if (a.t_recv_ns >= 0 && a.t_recv_ns < m_axis.begin_ns && a.t_send_ns < m_axis.begin_ns) continue;
    if (!merger.take(a)) continue;
    ++m_drawn;
    const QLineF line = lineOf(a);
    batches[static_cast<size_t>(a.kind) * 2 + (a.t_recv_ns < 0)].push_back(line);
    // The head at the receiving end, when there is one and the arrow is long enough.
    if (detailed && a.t_recv_ns >= 0 && line.length() > 10) heads.emplace_back(line, a.kind);
  }
  for (size_t k = 0; k < batches.size(); ++k) {
    if (batches[k].empty()) continue;
    // Width 0 (a cosmetic one-pixel pen) keeps the raster engine on its fast line path.
    QPen pen(colorOf(static_cast<ArrowKind>(k / 2)), detailed ? 1.2 : 0);
    if (k % 2) pen.setStyle(Qt::DashLine);  // never received
    p.setPen(pen);
    p.drawLines(batches[k].data(), static_cast<int>(batches[k].size()));
  }
  for (const auto& [line, kind] : heads) {
    const double angle = std::atan2(line.dy(), line.dx());
    const QPointF tip = line.p2();
    QPainterPath head(tip);
    head.lineTo(tip - QPointF(std::cos(angle - 0.4) * 7, std::sin(angle - 0.4) * 7));
    head.lineTo(tip - QPointF(std::cos(angle + 0.4) * 7, std::sin(angle + 0.4) * 7));
    head.closeSubpath();
    p.fillPath(head, colorOf(kind));
  }
}

int SequenceView::arrowAt(QPointF pos) const {
  const auto [first, last] = m_data->window(m_axis.begin_ns, m_axis.end_ns);
  int best = -1;
  double best_d = 5;  // px
  for (size_t i = first; i < last; ++i) {
    const SequenceArrow& a = m_data->arrows[i];
    if (!m_filter.accepts(a)) continue;
    const double d = distanceTo(lineOf(a), pos);
    if (d < best_d) {
      best_d = d;
      best = static_cast<int>(i);
    }
  }
  return best;
}

bool SequenceView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int i = arrowAt(help->pos());
    if (i >= 0) {
      QToolTip::showText(help->globalPos(),
                         QString::fromStdString(describeArrow(*m_data, m_data->arrows[static_cast<size_t>(i)])), this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(e);
}

void SequenceView::mousePressEvent(QMouseEvent* event) { pressAt(event->pos()); }

void SequenceView::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) panWithMouse(event->pos());
}

void SequenceView::mouseReleaseEvent(QMouseEvent* event) {
  if (!m_dragged) select(arrowAt(event->position()));
}

void SequenceView::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_F) {
    fitAll();
  } else if (event->key() == Qt::Key_Escape) {
    select(-1);
  } else if (!navigationKey(event)) {
    QWidget::keyPressEvent(event);
  }
}

}  // namespace ddpscope::gui
