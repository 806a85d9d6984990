#include "timeline_view.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "time_ruler.h"

namespace ddpscope::gui {
namespace {

QColor colorOf(probes::Kind kind) {
  using probes::Kind;
  switch (kind) {
    case Kind::Iteration:
      return QColor(0xdd, 0xdd, 0xdd);
    case Kind::Forward:
      return QColor(0x4c, 0x78, 0xa8);
    case Kind::Backward:
      return QColor(0xf5, 0x85, 0x18);
    case Kind::Optimizer:
      return QColor(0xb2, 0x79, 0xa2);
    case Kind::AutogradNode:
      return QColor(0xff, 0xbf, 0x79);
    case Kind::BucketCopy:
      return QColor(0x9d, 0x75, 0x5d);
    case Kind::Allreduce:
      return QColor(0x59, 0xa1, 0x4f);
    case Kind::CommHook:
      return QColor(0x8c, 0xd1, 0x7d);
    case Kind::Finalize:
      return QColor(0xe1, 0x57, 0x59);
    case Kind::PgOp:
      return QColor(0x76, 0xb7, 0xb2);
    default:
      return QColor(0xba, 0xb0, 0xac);
  }
}

// Nesting depth drawn as a narrower bar, so forward/backward show inside an iteration.
int depthOf(probes::Kind kind) {
  using probes::Kind;
  switch (kind) {
    case Kind::Iteration:
      return 0;
    case Kind::Forward:
    case Kind::Backward:
    case Kind::Optimizer:
    case Kind::PgOp:
    case Kind::Allreduce:
      return 1;
    case Kind::Finalize:
    case Kind::AutogradNode:
      return 2;
    default:
      return 3;
  }
}

}  // namespace

TimelineView::TimelineView(QWidget* parent)
    : QWidget(parent), m_data(std::make_shared<const TimelineData>()) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(false);
  setMinimumHeight(kTop + 2 * kLaneHeight);
}

void TimelineView::setData(std::shared_ptr<const TimelineData> data) {
  m_data = std::move(data);
  m_selectedFlow = -1;
  setMinimumHeight(kTop + static_cast<int>(m_data->lanes.size()) * kLaneHeight + 4);
  fitAll();
}

void TimelineView::updateData(std::shared_ptr<const TimelineData> data) {
  const bool following = m_data->lanes.empty() || m_axis.end_ns >= m_data->end_ns;
  m_data = std::move(data);
  setMinimumHeight(kTop + static_cast<int>(m_data->lanes.size()) * kLaneHeight + 4);
  if (following) {
    fitAll();
  } else {
    update();
  }
}

void TimelineView::fitAll() {
  m_axis.width_px = std::max(1, width() - kLabelWidth);
  m_axis.fit(m_data->begin_ns, m_data->end_ns);
  update();
}

void TimelineView::showIteration(int index) {
  if (index < 0 || index >= static_cast<int>(m_data->iterations.size())) return;
  m_iteration = index;
  m_axis.width_px = std::max(1, width() - kLabelWidth);
  m_axis.fit(m_data->iterations[index].first, m_data->iterations[index].second, 0.05);
  update();
}

bool TimelineView::selectFlow(int fromRank, qint64 fromNs, int toRank, qint64 toNs) {
  m_selectedFlow = -1;
  const auto& flows = m_data->flows;
  for (size_t i = 0; i < flows.size(); ++i) {
    const TimelineFlow& f = flows[i];
    if (f.kind == TimelineFlow::Kind::Message && f.from_ns == fromNs && f.to_ns == toNs &&
        m_data->lanes[f.from_lane].rank == fromRank && m_data->lanes[f.to_lane].rank == toRank) {
      m_selectedFlow = static_cast<int>(i);
      break;
    }
  }
  if (m_selectedFlow < 0) {
    update();
    return false;
  }
  const TimelineFlow& f = flows[static_cast<size_t>(m_selectedFlow)];
  // Both ends in view, with room around them to see what ran there.
  const int64_t a = std::min(f.from_ns, f.to_ns), b = std::max(f.from_ns, f.to_ns);
  const int64_t pad = std::max<int64_t>(5 * (b - a), 20'000);
  m_axis.width_px = std::max(1, width() - kLabelWidth);
  m_axis.fit(a - pad, b + pad, 0);
  update();
  return true;
}

void TimelineView::paintFlows(QPainter& p) {
  const auto& flows = m_data->flows;
  m_drawnFlows = 0;
  if (flows.empty()) return;
  const int x0 = kLabelWidth;
  p.setClipRect(x0, kTop, static_cast<int>(m_axis.width_px), height() - kTop);
  const auto earlier = [](const TimelineFlow& f) { return std::min(f.from_ns, f.to_ns); };
  auto it = std::lower_bound(flows.begin(), flows.end(), m_axis.begin_ns - m_data->longest_flow_ns,
                             [&](const TimelineFlow& f, int64_t t) { return earlier(f) < t; });
  // One flow per (pixel column of its earlier end, lane pair, kind); batched per kind.
  std::unordered_set<uint64_t> taken;
  std::vector<QLineF> messages, collectives;
  for (; it != flows.end() && earlier(*it) <= m_axis.end_ns; ++it) {
    if (std::max(it->from_ns, it->to_ns) < m_axis.begin_ns) continue;
    const QLineF line(x0 + m_axis.to_px(it->from_ns), laneCenter(it->from_lane), x0 + m_axis.to_px(it->to_ns),
                      laneCenter(it->to_lane));
    const auto column = static_cast<uint64_t>(std::clamp(std::min(line.x1(), line.x2()), 0.0, 1e6));
    const uint64_t key = column << 33 | uint64_t{it->from_lane} << 17 | uint64_t{it->to_lane} << 1 |
                         static_cast<uint64_t>(it->kind);
    if (!taken.insert(key).second) continue;
    (it->kind == TimelineFlow::Kind::Message ? messages : collectives).push_back(line);
  }
  m_drawnFlows = static_cast<int64_t>(messages.size() + collectives.size());
  const QColor message_color(0x4c, 0x78, 0xa8, 200);
  p.setPen(QPen(message_color, 0));
  p.drawLines(messages.data(), static_cast<int>(messages.size()));
  // Heads at the receiving ends while few enough to tell apart.
  if (messages.size() <= 400) {
    for (const QLineF& l : messages) {
      if (l.length() < 12) continue;
      const double angle = std::atan2(l.dy(), l.dx());
      const QPointF tip = l.p2();
      const QPointF head[3] = {tip, tip - QPointF(std::cos(angle - 0.4) * 6, std::sin(angle - 0.4) * 6),
                               tip - QPointF(std::cos(angle + 0.4) * 6, std::sin(angle + 0.4) * 6)};
      p.setBrush(message_color);
      p.drawPolygon(head, 3);
    }
    p.setBrush(Qt::NoBrush);
  }
  p.setPen(QPen(QColor(0x2c, 0x8c, 0x3c, 170), 0, Qt::DashLine));
  p.drawLines(collectives.data(), static_cast<int>(collectives.size()));
  if (m_selectedFlow >= 0 && m_selectedFlow < static_cast<int>(flows.size())) {
    const TimelineFlow& f = flows[static_cast<size_t>(m_selectedFlow)];
    const QPointF a(x0 + m_axis.to_px(f.from_ns), laneCenter(f.from_lane));
    const QPointF b(x0 + m_axis.to_px(f.to_ns), laneCenter(f.to_lane));
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 3));
    p.drawLine(a, b);
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(a, 6, 6);  // both ends, ringed
    p.drawEllipse(b, 6, 6);
    p.setRenderHint(QPainter::Antialiasing, false);
  }
  p.setClipping(false);
}

void TimelineView::resizeEvent(QResizeEvent*) {
  // Keep the visible time window; only the scale changes.
  m_axis.width_px = std::max(1, width() - kLabelWidth);
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const int x0 = kLabelWidth;
  const double w = m_axis.width_px;
  paintTimeRuler(p, m_axis, m_data->begin_ns, x0, kTop, height(), palette().color(QPalette::Mid));
  for (size_t l = 0; l < m_data->lanes.size(); ++l) {
    const TimelineLane& lane = m_data->lanes[l];
    const int y = kTop + static_cast<int>(l) * kLaneHeight;
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(4, y, kLabelWidth - 8, kLaneHeight), Qt::AlignVCenter | Qt::AlignLeft,
               QString::fromStdString(lane.label));
    p.setPen(palette().color(QPalette::Midlight));
    p.drawLine(0, y + kLaneHeight - 1, width(), y + kLaneHeight - 1);
    p.setClipRect(x0, y, static_cast<int>(w), kLaneHeight);
    // Exposed communication: a red band along the bottom of each of the rank's lanes.
    for (const probes::Interval& e : lane.exposed) {
      if (e.end < m_axis.begin_ns || e.begin > m_axis.end_ns) continue;
      const double a = std::max(0.0, m_axis.to_px(e.begin));
      const double b = std::min(w, m_axis.to_px(e.end));
      p.fillRect(QRectF(x0 + a, y + kLaneHeight - 5, std::max(1.0, b - a), 4),
                 QColor(0xd6, 0x27, 0x28));
    }
    // Level of detail: per depth, the last pixel column drawn; narrower spans that fall
    // into it are skipped (they would paint the same pixels).
    int lastColumn[4] = {-1, -1, -1, -1};
    // Only spans that can reach the window: none starts earlier than the longest span
    // before its left edge (a binary search, not a walk from the start of the run).
    const auto first =
        std::lower_bound(lane.spans.begin(), lane.spans.end(), m_axis.begin_ns - lane.longest_ns,
                         [](const TimelineSpan& s, int64_t t) { return s.begin_ns < t; });
    // A one-pixel mark at `column` for a span of `kind`, unless its depth has one there.
    auto mark = [&](probes::Kind kind, int column) {
      const int depth = depthOf(kind);
      if (lastColumn[depth] == column) return;
      lastColumn[depth] = column;
      const int inset = depth * 3;
      p.fillRect(QRectF(x0 + column, y + 2 + inset, 1, kLaneHeight - 4 - 2 * inset), colorOf(kind));
    };
    const size_t n = lane.spans.size();
    for (size_t i = static_cast<size_t>(first - lane.spans.begin()); i < n; ++i) {
      const TimelineSpan& s = lane.spans[i];
      if (s.end_ns < m_axis.begin_ns) continue;
      if (s.begin_ns > m_axis.end_ns) break;
      const double a = std::max(0.0, m_axis.to_px(s.begin_ns));
      const double b = std::min(w, m_axis.to_px(s.end_ns));
      const int depth = depthOf(s.kind);
      const int column = static_cast<int>(a);
      if (b - a < 1) {
        mark(s.kind, column);
        // Whole blocks ending within this column hold only marks for it: one per kind,
        // without visiting their spans (a 1M-span run zoomed out).
        if ((i + 1) % TimelineLane::kBlock == 0) {
          const int64_t column_end = m_axis.to_ns(column + 1);
          size_t block = (i + 1) / TimelineLane::kBlock;
          uint32_t kinds = 0;
          while (block < lane.block_max_end.size() && lane.block_max_end[block] < column_end)
            kinds |= lane.block_kinds[block++];
          for (int k = 0; kinds != 0 && k < probes::kNumKinds; ++k) {
            if (kinds & (1u << k)) mark(static_cast<probes::Kind>(k), column);
          }
          i = std::max(i, block * TimelineLane::kBlock - 1);
        }
        continue;
      }
      lastColumn[depth] = static_cast<int>(b);
      const int inset = depth * 3;
      const QRectF r(x0 + a, y + 2 + inset, b - a, kLaneHeight - 4 - 2 * inset);
      p.fillRect(r, colorOf(s.kind));
      if (r.width() > 40) {
        p.setPen(Qt::black);
        const QString label = s.kind == probes::Kind::Allreduce && s.bucket >= 0
                                  ? QStringLiteral("bucket %1").arg(s.bucket)
                                  : QString::fromStdString(m_data->name_of(s.name));
        p.drawText(
            r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
            p.fontMetrics().elidedText(label, Qt::ElideRight, static_cast<int>(r.width()) - 5));
      }
    }
    // Gradient-ready and bucket-ready ticks: those in the window (a binary search), one
    // per pixel column.
    p.setPen(QColor(0x33, 0x33, 0x33));
    int lastTick = -1, lastLabelEnd = -1;
    for (auto it = std::lower_bound(lane.instants.begin(), lane.instants.end(), m_axis.begin_ns,
                                    [](const TimelineSpan&s, int64_t t) { return s.begin_ns < t; });
         it != lane.instants.end() && it->begin_ns <= m_axis.end_ns; ++it) {
      const int x = x0 + static_cast<int>(m_axis.to_px(it->begin_ns));
      if (it->kind == probes::Kind::Mark) {
        // A mark (an injected stall, a non-finite loss) is what the user looks for: a
        // red line through the lane and its name, unless the previous label is there.
        p.save();
        p.setPen(QColor(0xc6, 0x28, 0x28));
        p.drawLine(x, y + 1, x, y + kLaneHeight - 1);
        const QString label = QString::fromStdString(m_data->name_of(it->name));
        const QFontMetrics fm = p.fontMetrics();
        const int w = std::min(220, fm.horizontalAdvance(label) + 6);
        if (x + 2 > lastLabelEnd) {
          const QRect box(x + 2, y + 1, w, std::min(fm.height(), kLaneHeight - 2));
          p.fillRect(box, QColor(255, 255, 255, 225));
          p.drawText(box.adjusted(3, 0, -1, 0), Qt::AlignVCenter | Qt::AlignLeft,
                     fm.elidedText(label, Qt::ElideRight, w - 4));
          lastLabelEnd = box.right();
        }
        p.restore();
        continue;
      }
      if (x == lastTick) continue;
      lastTick = x;
      p.drawLine(x, y + kLaneHeight - 8, x, y + kLaneHeight - 2);
    }
    p.setClipping(false);
  }
  paintFlows(p);
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  m_axis.zoom(std::pow(1.25, steps), event->position().x() - kLabelWidth);
  update();
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  m_pressAt = m_lastDrag = event->pos();
  m_dragged = false;
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton)) return;
  const int dx = event->pos().x() - m_lastDrag.x();
  if (std::abs(event->pos().x() - m_pressAt.x()) > 3) m_dragged = true;
  m_axis.pan(-dx);  // drag right: earlier times come into view
  m_lastDrag = event->pos();
  update();
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  if (m_dragged) return;
  const int lane = (event->pos().y() - kTop) / kLaneHeight;
  if (event->pos().y() < kTop || lane >= static_cast<int>(m_data->lanes.size())) return;
  const int64_t t = m_axis.to_ns(event->pos().x() - kLabelWidth);
  const auto slack = static_cast<int64_t>(2 * m_axis.ns_per_px());
  if (const TimelineSpan* s = m_data->spanAt(static_cast<size_t>(lane), t, slack))
    emit spanClicked(describe(*s, m_data->lanes[static_cast<size_t>(lane)]));
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_F:
      fitAll();
      break;
    case Qt::Key_N:
      showIteration(m_iteration + 1);
      break;
    case Qt::Key_P:
      showIteration(std::max(0, m_iteration - 1));
      break;
    default:
      QWidget::keyPressEvent(event);
  }
}

QString TimelineView::describe(const TimelineSpan& s, const TimelineLane& lane) const {
  QString text =
      QStringLiteral("%1 · %2 · %3: %4 µs")
          .arg(QString::fromStdString(lane.label), QString::fromLatin1(probes::kind_name(s.kind)),
               QString::fromStdString(m_data->name_of(s.name)))
          .arg((s.end_ns - s.begin_ns) * 1e-3, 0, 'f', 1);
  if (s.iteration >= 0) text += QStringLiteral(" · iteration %1").arg(s.iteration);
  if (s.bucket >= 0) text += QStringLiteral(" · bucket %1").arg(s.bucket);
  if (s.bytes >= 0) text += QStringLiteral(" · %1 bytes").arg(s.bytes);
  return text;
}

}  // namespace ddpscope::gui
