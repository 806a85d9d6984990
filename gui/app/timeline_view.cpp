#include "timeline_view.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "kind_colors.h"
#include "span_details.h"
#include "time_format.h"

namespace ddpscope::gui {
namespace {

constexpr int kRow = TrackLayout::kRowHeight;
const QColor kMarkRed(0xc6, 0x28, 0x28);
const QColor kExposedRed(0xd6, 0x27, 0x28);

// A mark's words; a collective's failure says which and how ("allreduce #5 timed out").
QString markLabel(const TimelineSpan& s, const std::string& name) {
  const QString text = QString::fromStdString(name);
  if (s.kind != probes::Kind::CollectiveFailed) return text;
  return QStringLiteral("%1 #%2 %3")
      .arg(text)
      .arg(s.seq)
      .arg(s.param == 1 ? QStringLiteral("timed out") : QStringLiteral("failed"));
}

}  // namespace

TimelineView::TimelineView(QWidget* parent)
    : TimeAxisWidget(kLabelWidth, 0, parent), m_data(std::make_shared<const TimelineData>()) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(false);
  relayout();
}

void TimelineView::relayout() {
  m_layout = layoutTracks(*m_data, m_collapsed, kTop, m_hosts);
  setMinimumHeight(std::max(m_layout.bottom + 4, kTop + 2 * kRow));
  update();
}

void TimelineView::setData(std::shared_ptr<const TimelineData> data) {
  m_data = std::move(data);
  m_selectedFlow = -1;
  m_selection = {};
  m_rangeBegin = m_rangeEnd = 0;
  relayout();
  fitAll();
  emit dataReplaced();
  emit selectionChanged();
  emit rangeChanged();
}

void TimelineView::updateData(std::shared_ptr<const TimelineData> data) {
  const bool following = m_data->lanes.empty() || m_axis.end_ns >= m_data->end_ns;
  // A grown run re-sorts lanes: a selection is kept only when it still names a span.
  const TimelineSpan* before = m_data->resolve(m_selection);
  const int64_t selectedRow = before ? before->rowid : 0;
  m_data = std::move(data);
  if (selectedRow == 0 || !m_data->resolve(m_selection) || m_data->resolve(m_selection)->rowid != selectedRow) {
    if (m_selection.valid()) {
      m_selection = {};
      emit selectionChanged();
    }
  }
  relayout();
  if (following) {
    fitAll();
  } else {
    update();
  }
  emit dataReplaced();
  if (m_rangeEnd > m_rangeBegin) emit rangeChanged();  // the range's sums grew with the run
}

void TimelineView::fitAll() {
  m_axis.width_px = plotWidth();
  m_axis.fit(m_data->begin_ns, m_data->end_ns);
  update();
}

void TimelineView::showIteration(int index) {
  if (index < 0 || index >= static_cast<int>(m_data->iterations.size())) return;
  m_iteration = index;
  m_axis.width_px = plotWidth();
  m_axis.fit(m_data->iterations[index].first, m_data->iterations[index].second, 0.05);
  update();
}

void TimelineView::showTimeRange(int rank, int64_t begin_ns, int64_t end_ns) {
  if (end_ns < begin_ns) std::swap(begin_ns, end_ns);
  if (rank >= 0 && rankCollapsed(rank)) setRankCollapsed(rank, false);
  const int64_t pad = std::max<int64_t>(end_ns - begin_ns, 1'000'000);
  m_axis.width_px = plotWidth();
  m_axis.fit(begin_ns - pad, end_ns + pad, 0);
  setRange(begin_ns, end_ns);
}

void TimelineView::setRankCollapsed(int rank, bool collapsed) {
  if (collapsed) {
    m_collapsed.insert(rank);
  } else {
    m_collapsed.erase(rank);
    if (const auto it = m_hosts.host_of.find(rank); it != m_hosts.host_of.end()) m_hosts.collapsed.erase(it->second);
  }
  relayout();
}

bool TimelineView::rankCollapsed(int rank) const {
  if (m_collapsed.count(rank)) return true;
  const auto it = m_hosts.host_of.find(rank);
  return it != m_hosts.host_of.end() && hostCollapsed(it->second);
}

void TimelineView::setHosts(std::map<int, std::string> hostOfRank) {
  if (hostOfRank == m_hosts.host_of) return;  // the same job reloaded: keep what the user folded
  m_hosts.host_of = std::move(hostOfRank);
  m_hosts.collapsed.clear();
  std::set<std::string> hosts;
  for (const auto& [rank, host] : m_hosts.host_of)
    hosts.insert(host);
  if (hosts.size() > 1 && m_hosts.host_of.size() > 32) m_hosts.collapsed = hosts;  // a wide job: hosts first
  relayout();
}

void TimelineView::setHostCollapsed(const std::string& host, bool collapsed) {
  if (collapsed)
    m_hosts.collapsed.insert(host);
  else
    m_hosts.collapsed.erase(host);
  relayout();
}

void TimelineView::select(const SpanRef& ref, bool reveal) {
  const TimelineSpan* s = m_data->resolve(ref);
  m_selection = s ? ref : SpanRef{};
  m_selectedFlow = -1;  // one thing selected at a time: the details say which
  if (s && reveal) {
    setRankCollapsed(m_data->lanes[static_cast<size_t>(ref.lane)].rank, false);
    // Keep the zoom when the span fits in view; else fit it with room around it.
    const int64_t w = m_axis.end_ns - m_axis.begin_ns;
    const int64_t len = std::max<int64_t>(s->end_ns - s->begin_ns, 1);
    m_axis.width_px = plotWidth();
    if (len < w * 0.8) {
      const int64_t mid = s->begin_ns + len / 2;
      m_axis.begin_ns = mid - w / 2;
      // Centred on a span near the run's start, the window would begin before it (the
      // ruler then counts negative times): a window narrower than the run stays inside
      // it, and a wider one keeps the whole run in view.
      const int64_t a = m_data->begin_ns, b = m_data->end_ns - w;
      m_axis.begin_ns = std::clamp(m_axis.begin_ns, std::min(a, b), std::max(a, b));
      m_axis.end_ns = m_axis.begin_ns + w;
    } else {
      m_axis.fit(s->begin_ns, s->begin_ns + len, 0.1);
    }
    emit revealRequested(static_cast<int>(laneCenter(static_cast<uint32_t>(ref.lane))));
  }
  update();
  emit selectionChanged();
  emit spanClicked(s ? describe(ref) : QString());
}

void TimelineView::setRange(int64_t begin_ns, int64_t end_ns) {
  m_rangeBegin = std::min(begin_ns, end_ns);
  m_rangeEnd = std::max(begin_ns, end_ns);
  update();
  emit rangeChanged();
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
  m_axis.width_px = plotWidth();
  m_axis.fit(a - pad, b + pad, 0);
  m_selection = SpanRef{};  // the message is what is selected: the details show it
  update();
  emit selectionChanged();
  return true;
}

QRectF TimelineView::spanRect(const SpanRef& ref) const {
  const TimelineSpan* s = m_data->resolve(ref);
  if (!s || m_layout.lane_row[static_cast<size_t>(ref.lane)] < 0) return {};
  const double a = kLabelWidth + m_axis.toPx(s->begin_ns);
  if (ref.in == SpanRef::In::Instants) {
    const int top = m_layout.rows[static_cast<size_t>(m_layout.lane_row[static_cast<size_t>(ref.lane)])].y;
    return QRectF(a - 1, top, 3, m_layout.stripTop(ref.lane) + TrackLayout::kStripHeight - top);
  }
  const double b = kLabelWidth + m_axis.toPx(s->end_ns);
  return QRectF(a, m_layout.rowTop(ref.lane, s->row) + 1, std::max(1.0, b - a), kRow - 2);
}

QPoint TimelineView::pointOf(const SpanRef& ref) const {
  const QRectF r = spanRect(ref);
  if (r.isNull()) return {-1, -1};
  const TimelineSpan* s = m_data->resolve(ref);
  const double left = std::max<double>(r.left(), kLabelWidth);
  const double right = std::min<double>(r.right(), kLabelWidth + m_axis.width_px - 1);
  if (right < left) return {-1, -1};
  if (ref.in == SpanRef::In::Instants)
    return QPoint(static_cast<int>(std::lround(kLabelWidth + m_axis.toPx(s->begin_ns))),
                  m_layout.stripTop(ref.lane) + TrackLayout::kStripHeight / 2);
  return QPoint(static_cast<int>((left + right) / 2), static_cast<int>(r.center().y()));
}

SpanRef TimelineView::hitTest(QPoint pos) const {
  const int index = m_layout.rowAt(pos.y());
  if (index < 0 || pos.x() < kLabelWidth) return {};
  const TrackRow& track = m_layout.rows[static_cast<size_t>(index)];
  if (track.type != TrackRow::Type::Lane) return {};
  const auto lane = static_cast<size_t>(track.lane);
  const TimelineLane& l = m_data->lanes[lane];
  const int64_t t = m_axis.toNs(pos.x() - kLabelWidth);
  const auto slack = static_cast<int64_t>(3 * m_axis.nsPerPx());
  // Instants within 3 px: a mark anywhere on the lane (its line crosses it), a tick in
  // the strip. The nearest wins.
  const bool inStrip = pos.y() >= m_layout.stripTop(track.lane);
  const TimelineSpan* best = nullptr;
  int64_t bestDistance = slack + 1;
  for (auto it = std::lower_bound(l.instants.begin(), l.instants.end(), t - slack,
                                  [](const TimelineSpan&s, int64_t v) { return s.begin_ns < v; });
       it != l.instants.end() && it->begin_ns <= t + slack; ++it) {
    if (!isMarkKind(it->kind) && !inStrip) continue;
    const int64_t distance = std::abs(it->begin_ns - t);
    if (distance < bestDistance) best = &*it, bestDistance = distance;
  }
  if (best) return m_data->refOf(lane, best);
  const int depth = m_layout.depthAt(index, pos.y());
  if (depth < 0) return {};
  return m_data->refOf(lane, m_data->spanAt(lane, t, static_cast<int64_t>(m_axis.nsPerPx()), depth));
}

void TimelineView::paintLane(QPainter& p, size_t laneIndex, int top, int rows, int rowHeight) {
  const TimelineLane& lane = m_data->lanes[laneIndex];
  const int x0 = kLabelWidth;
  const double w = m_axis.width_px;
  // Level of detail: per row, the last pixel column drawn; narrower spans falling into it
  // are skipped (they would paint the same pixels).
  std::vector<int> lastColumn(static_cast<size_t>(rows), -1);
  const auto first = std::lower_bound(lane.spans.begin(), lane.spans.end(), m_axis.begin_ns - lane.longest_ns,
                                      [](const TimelineSpan& s, int64_t t) { return s.begin_ns < t; });
  auto mark = [&](int row, probes::Kind kind, int column) {
    if (row >= rows || lastColumn[static_cast<size_t>(row)] == column) return;
    lastColumn[static_cast<size_t>(row)] = column;
    p.fillRect(QRectF(x0 + column, top + row * rowHeight + 1, 1, rowHeight - 2), kindColor(kind));
  };
  const size_t n = lane.spans.size();
  const QFontMetrics fm = p.fontMetrics();
  for (size_t i = static_cast<size_t>(first - lane.spans.begin()); i < n; ++i) {
    const TimelineSpan& s = lane.spans[i];
    if (s.end_ns < m_axis.begin_ns) continue;
    if (s.begin_ns > m_axis.end_ns) break;
    const double a = std::max(0.0, m_axis.toPx(s.begin_ns));
    const double b = std::min(w, m_axis.toPx(s.end_ns));
    const int column = static_cast<int>(a);
    if (b - a < 1) {
      mark(s.row, s.kind, column);
      // Whole blocks ending within this column hold only marks for it: one per row,
      // without visiting their spans (a 1M-span run zoomed out).
      if ((i + 1) % TimelineLane::kBlock == 0) {
        const int64_t column_end = m_axis.toNs(column + 1);
        size_t block = (i + 1) / TimelineLane::kBlock;
        std::array<uint8_t, TimelineLane::kLodRows> kinds;
        kinds.fill(TimelineLane::kNoKind);
        while (block < lane.block_max_end.size() && lane.block_max_end[block] < column_end) {
          for (int r = 0; r < TimelineLane::kLodRows; ++r) {
            if (lane.block_row_kinds[block][r] != TimelineLane::kNoKind) kinds[r] = lane.block_row_kinds[block][r];
          }
          ++block;
        }
        for (int r = 0; r < TimelineLane::kLodRows; ++r) {
          if (kinds[r] != TimelineLane::kNoKind) mark(r, static_cast<probes::Kind>(kinds[r]), column);
        }
        i = std::max(i, block * TimelineLane::kBlock - 1);
      }
      continue;
    }
    if (s.row >= rows) continue;
    lastColumn[s.row] = static_cast<int>(b);
    const QRectF r(x0 + a, top + s.row * rowHeight + 1, b - a, rowHeight - 2);
    p.fillRect(r, kindColor(s.kind));
    if (s.cut_short) {  // an error ended it: hatched, cut off at a red edge
      p.fillRect(r, QBrush(kMarkRed, Qt::BDiagPattern));
      p.fillRect(QRectF(r.right() - 2, r.top(), 2, r.height()), kMarkRed);
    }
    if (r.width() > 40 && rowHeight >= 14) {
      p.setPen(Qt::black);
      const QString label = s.kind == probes::Kind::Allreduce && s.bucket >= 0
                                ? tr("bucket %1").arg(s.bucket)
                                : QString::fromStdString(m_data->nameOf(s.name));
      p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 fm.elidedText(label, Qt::ElideRight, static_cast<int>(r.width()) - 5));
    }
  }
  paintOpenSpans(p, laneIndex, top, rows, rowHeight);
}

// Unfinished ops: open to the run's end, hatched, their right edge an arrow.
void TimelineView::paintOpenSpans(QPainter& p, size_t laneIndex, int top, int rows, int rowHeight) {
  const TimelineLane& lane = m_data->lanes[laneIndex];
  const int x0 = kLabelWidth;
  const double w = m_axis.width_px;
  const QFontMetrics fm = p.fontMetrics();
  for (const TimelineSpan& o : lane.open) {
    if (o.row >= rows || o.begin_ns > m_axis.end_ns) continue;
    const double a = std::max(0.0, m_axis.toPx(o.begin_ns));
    const double b = std::min(w, m_axis.toPx(o.end_ns));
    const QRectF r(x0 + a, top + o.row * rowHeight + 1, std::max(2.0, b - a), rowHeight - 2);
    p.fillRect(r, kindColor(o.kind).lighter(125));
    p.fillRect(r, QBrush(kMarkRed, Qt::BDiagPattern));
    p.setPen(QPen(kMarkRed, 1, Qt::DashLine));
    p.drawRect(r.adjusted(0, 0, -1, -1));
    if (r.width() > 60 && rowHeight >= 14) {
      p.setPen(Qt::black);
      const QString label =
          o.kind == probes::Kind::Iteration
              ? tr("iteration %1 — never finished").arg(o.iteration)
              : tr("%1 #%2 — never finished").arg(QString::fromStdString(m_data->nameOf(o.name))).arg(o.seq);
      p.drawText(r.adjusted(4, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 fm.elidedText(label, Qt::ElideRight, static_cast<int>(r.width()) - 6));
    }
  }
}

void TimelineView::paintInstants(QPainter& p, size_t laneIndex) {
  const TimelineLane& lane = m_data->lanes[laneIndex];
  const int li = static_cast<int>(laneIndex);
  const TrackRow& track = m_layout.rows[static_cast<size_t>(m_layout.lane_row[laneIndex])];
  const int strip = m_layout.stripTop(li);
  const int x0 = kLabelWidth;
  const double w = m_axis.width_px;
  // Exposed communication: a red band in the strip. The intervals are disjoint and by
  // time, so the first that ends in the window is found by halving.
  for (auto it = std::partition_point(lane.exposed.begin(), lane.exposed.end(),
                                      [&](const probes::Interval& e) { return e.end < m_axis.begin_ns; });
       it != lane.exposed.end() && it->begin <= m_axis.end_ns; ++it) {
    const probes::Interval& e = *it;
    const double a = std::max(0.0, m_axis.toPx(e.begin));
    const double b = std::min(w, m_axis.toPx(e.end));
    p.fillRect(QRectF(x0 + a, strip + TrackLayout::kStripHeight - 3, std::max(1.0, b - a), 3), kExposedRed);
  }
  // Gradient-ready and bucket-ready ticks in the strip, one per pixel column; marks (an
  // injected stall, a non-finite loss) as a red line through the track with their name.
  p.setPen(palette().color(QPalette::Text));
  int lastTick = -1, lastLabelEnd = -1;
  const QFontMetrics fm = p.fontMetrics();
  for (auto it = std::lower_bound(lane.instants.begin(), lane.instants.end(), m_axis.begin_ns,
                                  [](const TimelineSpan&s, int64_t t) { return s.begin_ns < t; });
       it != lane.instants.end() && it->begin_ns <= m_axis.end_ns; ++it) {
    const int x = x0 + static_cast<int>(m_axis.toPx(it->begin_ns));
    if (isMarkKind(it->kind)) {
      p.save();
      p.setPen(kMarkRed);
      p.drawLine(x, track.y + 1, x, track.y + track.height - 1);
      const QString label = markLabel(*it, m_data->nameOf(it->name));
      const int lw = std::min(220, fm.horizontalAdvance(label) + 6);
      if (x + 2 > lastLabelEnd) {
        const QRect box(x + 2, track.y + 1, lw, std::min(fm.height(), kRow - 2));
        p.fillRect(box, QColor(255, 255, 255, 225));
        p.drawText(box.adjusted(3, 0, -1, 0), Qt::AlignVCenter | Qt::AlignLeft,
                   fm.elidedText(label, Qt::ElideRight, lw - 4));
        lastLabelEnd = box.right();
      }
      p.restore();
      continue;
    }
    if (x == lastTick) continue;
    lastTick = x;
    p.drawLine(x, strip, x, strip + TrackLayout::kStripHeight - 4);
  }
}

// The flows in the window, one per (pixel column of its earlier end, lane pair, kind).
TimelineView::VisibleFlows TimelineView::visibleFlows() const {
  VisibleFlows v;
  const auto& flows = m_data->flows;
  if (flows.empty()) return v;
  const int x0 = kLabelWidth;
  const auto earlier = [](const TimelineFlow& f) { return std::min(f.from_ns, f.to_ns); };
  auto it = std::lower_bound(flows.begin(), flows.end(), m_axis.begin_ns - m_data->longest_flow_ns,
                             [&](const TimelineFlow& f, int64_t t) { return earlier(f) < t; });
  std::unordered_set<uint64_t> taken;
  for (; it != flows.end() && earlier(*it) <= m_axis.end_ns; ++it) {
    if (std::max(it->from_ns, it->to_ns) < m_axis.begin_ns) continue;
    const QLineF line(x0 + m_axis.toPx(it->from_ns), laneCenter(it->from_lane), x0 + m_axis.toPx(it->to_ns),
                      laneCenter(it->to_lane));
    const auto column = static_cast<uint64_t>(std::clamp(std::min(line.x1(), line.x2()), 0.0, 1e6));
    const uint64_t key =
        column << 34 | uint64_t{it->from_lane} << 18 | uint64_t{it->to_lane} << 2 | static_cast<uint64_t>(it->kind);
    if (!taken.insert(key).second) continue;
    (it->kind == TimelineFlow::Kind::Message  ? v.messages
     : it->kind == TimelineFlow::Kind::Launch ? v.launches
                                              : v.collectives)
        .push_back(line);
  }
  return v;
}

// One collective's ends across ranks, dashed, under the spans: drawn over them, the links
// crossed the other ranks' tracks and hid what they ran.
void TimelineView::paintCollectiveLinks(QPainter& p, const VisibleFlows& v) {
  p.setClipRect(kLabelWidth, kTop, static_cast<int>(m_axis.width_px), height() - kTop);
  p.setPen(QPen(QColor(0x2c, 0x8c, 0x3c, 170), 0, Qt::DashLine));
  p.drawLines(v.collectives.data(), static_cast<int>(v.collectives.size()));
  p.setClipping(false);
}

// Messages and launches over the spans (they are what the user follows), and the
// selected flow.
void TimelineView::paintFlows(QPainter& p, const VisibleFlows& v) {
  const auto& flows = m_data->flows;
  m_drawnFlows = static_cast<int64_t>(v.messages.size() + v.collectives.size() + v.launches.size());
  if (flows.empty()) return;
  const int x0 = kLabelWidth;
  p.setClipRect(x0, kTop, static_cast<int>(m_axis.width_px), height() - kTop);
  // Launches first and faint: there can be one per kernel.
  p.setPen(QPen(QColor(0x7b, 0x6f, 0xc9, 110), 0));
  p.drawLines(v.launches.data(), static_cast<int>(v.launches.size()));
  const QColor message_color(0x4c, 0x78, 0xa8, 200);
  p.setPen(QPen(message_color, 0));
  p.drawLines(v.messages.data(), static_cast<int>(v.messages.size()));
  // Heads at the receiving ends while few enough to tell apart.
  if (v.messages.size() <= 400) {
    for (const QLineF& l : v.messages) {
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
  if (m_selectedFlow >= 0 && m_selectedFlow < static_cast<int>(flows.size())) {
    const TimelineFlow& f = flows[static_cast<size_t>(m_selectedFlow)];
    const QPointF a(x0 + m_axis.toPx(f.from_ns), laneCenter(f.from_lane));
    const QPointF b(x0 + m_axis.toPx(f.to_ns), laneCenter(f.to_lane));
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

void TimelineView::paintSelection(QPainter& p) {
  const int x0 = kLabelWidth;
  const int w = static_cast<int>(m_axis.width_px);
  if (m_rangeEnd > m_rangeBegin) {
    // The range: shaded over every track, its length in the ruler.
    const double a = std::clamp(m_axis.toPx(m_rangeBegin), -1.0, m_axis.width_px + 1);
    const double b = std::clamp(m_axis.toPx(m_rangeEnd), -1.0, m_axis.width_px + 1);
    p.setClipRect(x0, 0, w, height());
    const QColor shade = palette().color(QPalette::Highlight);
    p.fillRect(QRectF(x0 + a, kTop, b - a, height() - kTop), QColor(shade.red(), shade.green(), shade.blue(), 40));
    p.setPen(QPen(shade, 1));
    p.drawLine(QPointF(x0 + a, kIterationBand), QPointF(x0 + a, height()));
    p.drawLine(QPointF(x0 + b, kIterationBand), QPointF(x0 + b, height()));
    const QString text = QString::fromStdString(formatDuration(m_rangeEnd - m_rangeBegin));
    const QRectF box = rangeBadgeRect();
    p.fillRect(box, shade);
    p.setPen(palette().color(QPalette::HighlightedText));
    p.drawText(box, Qt::AlignCenter, text);
    p.setClipping(false);
  }
  const QRectF r = spanRect(m_selection);
  if (!r.isNull()) {
    p.setClipRect(x0, kTop, w, height() - kTop);
    p.setPen(QPen(palette().color(QPalette::Text), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r.adjusted(-1, -1, 1, 1));
    p.setClipping(false);
  }
}

void TimelineView::paintHeader(QPainter& p, const TrackRow& track, const QColor& fill, const QString& label) {
  p.fillRect(QRect(0, track.y, width(), track.height), fill);
  QFont bold = p.font();
  bold.setBold(true);
  p.save();
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QRect(4, track.y, kLabelWidth - 8, track.height), Qt::AlignVCenter | Qt::AlignLeft,
             QFontMetrics(bold).elidedText((track.collapsed ? QStringLiteral("▸ ") : QStringLiteral("▾ ")) + label,
                                           Qt::ElideMiddle, kLabelWidth - 8));
  p.restore();
  if (!track.collapsed) return;
  // Folded: the first lane under it shows its outermost spans (its iterations).
  for (size_t l = 0; l < m_data->lanes.size(); ++l) {
    const int header = m_layout.group_row[l];
    if (header < 0 || &m_layout.rows[static_cast<size_t>(header)] != &track) continue;
    p.setClipRect(kLabelWidth, track.y, static_cast<int>(m_axis.width_px), track.height);
    paintLane(p, l, track.y + 2, 1, track.height - 4);
    p.setClipping(false);
    return;
  }
}

void TimelineView::paintEvent(QPaintEvent* event) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  paintRuler(p);
  const int x0 = kLabelWidth;
  const int w = static_cast<int>(m_axis.width_px);
  const QFontMetrics fm = p.fontMetrics();
  // Only the tracks in the region to paint: in its scroll area the view is as tall as all
  // its tracks, and 64 ranks' lanes painted whole took 40 ms a frame where ten show.
  const QRect exposed = event->rect();
  const VisibleFlows flows = visibleFlows();
  paintCollectiveLinks(p, flows);
  for (const TrackRow& track : m_layout.rows) {
    if (track.y > exposed.bottom() || track.y + track.height < exposed.top()) continue;
    if (track.type == TrackRow::Type::Host) {
      paintHeader(p, track, palette().color(QPalette::Mid).lighter(130),
                  (track.host.empty() ? tr("(host not recorded)") : QString::fromStdString(track.host)) +
                      (track.ranks == 1 ? tr(" · 1 rank") : tr(" · %1 ranks").arg(track.ranks)));
      continue;
    }
    if (track.type == TrackRow::Type::Group) {
      paintHeader(p, track, palette().color(QPalette::AlternateBase), tr("rank %1").arg(track.rank));
      continue;
    }
    const auto l = static_cast<size_t>(track.lane);
    const TimelineLane& lane = m_data->lanes[l];
    p.setPen(palette().color(QPalette::Text));
    const QString label = QString::fromStdString(lane.thread_name);
    p.drawText(QRect(16, track.y, kLabelWidth - 20, kRow + TrackLayout::kLanePad), Qt::AlignVCenter | Qt::AlignLeft,
               fm.elidedText(label, Qt::ElideMiddle, kLabelWidth - 20));
    p.setPen(palette().color(QPalette::Midlight));
    p.drawLine(0, track.y + track.height - 1, width(), track.y + track.height - 1);
    p.setClipRect(x0, track.y, w, track.height);
    paintLane(p, l, m_layout.rowTop(track.lane, 0), lane.rows, kRow);
    paintInstants(p, l);
    p.setClipping(false);
  }
  if (m_data->lanes.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(0, kTop, 0, 0), Qt::AlignCenter,
               tr("No spans in this run yet.\nOpen a run from the list, or launch a job (Run ▸ Launch job)."));
  }
  paintFlows(p, flows);
  paintSelection(p);
  // Every zoom, pan and fit ends in a paint: the window is announced from here once.
  if (m_axis.begin_ns != m_announced.first || m_axis.end_ns != m_announced.second) {
    m_announced = {m_axis.begin_ns, m_axis.end_ns};
    emit windowChanged(m_axis.begin_ns, m_axis.end_ns);
  }
}

void TimelineView::showWindow(int64_t begin_ns, int64_t end_ns) {
  if (end_ns <= begin_ns) return;
  m_axis.width_px = plotWidth();
  m_axis.fit(begin_ns, end_ns, 0);
  update();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  pressAt(event->pos());
  m_panning = event->button() == Qt::MiddleButton ||
              (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
  // A click on a rank's header collapses or expands it; on a host's, all its ranks.
  const int index = m_layout.rowAt(event->pos().y());
  if (event->button() == Qt::LeftButton && index >= 0 &&
      m_layout.rows[static_cast<size_t>(index)].type == TrackRow::Type::Host) {
    const TrackRow& h = m_layout.rows[static_cast<size_t>(index)];
    setHostCollapsed(h.host, !h.collapsed);
    m_dragged = true;
    return;
  }
  if (event->button() == Qt::LeftButton && index >= 0 &&
      m_layout.rows[static_cast<size_t>(index)].type == TrackRow::Type::Group && event->pos().x() < kLabelWidth) {
    const TrackRow& g = m_layout.rows[static_cast<size_t>(index)];
    setRankCollapsed(g.rank, !g.collapsed);
    m_dragged = true;  // not a click on the tracks
  }
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & (Qt::LeftButton | Qt::MiddleButton))) return;
  if (m_panning) {
    panWithMouse(event->pos());
    return;
  }
  if (std::abs(event->pos().x() - m_pressAt.x()) > 3) m_dragged = true;
  if (m_dragged && m_pressAt.x() >= kLabelWidth) {
    setRange(m_axis.toNs(m_pressAt.x() - kLabelWidth),
             m_axis.toNs(std::max(kLabelWidth, event->pos().x()) - kLabelWidth));
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  if (m_dragged || event->button() != Qt::LeftButton) return;
  if (m_rangeEnd > m_rangeBegin) setRange(0, 0);
  select(hitTest(event->pos()));
}

bool TimelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const SpanRef ref = hitTest(help->pos());
    if (ref.valid()) {
      QToolTip::showText(help->globalPos(), describe(ref), this);
    } else {
      const int index = m_layout.rowAt(help->pos().y());
      if (index >= 0 && help->pos().x() < kLabelWidth && m_layout.rows[static_cast<size_t>(index)].lane >= 0)
        QToolTip::showText(
            help->globalPos(),
            QString::fromStdString(
                m_data->lanes[static_cast<size_t>(m_layout.rows[static_cast<size_t>(index)].lane)].label),
            this);
      else
        QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(e);
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  if (navigationKey(event)) return;
  const bool ctrl = event->modifiers() & Qt::ControlModifier;
  switch (event->key()) {
    case Qt::Key_F:
      if (ctrl) {
        emit searchRequested();
      } else {
        fitAll();
      }
      break;
    case Qt::Key_Slash: emit searchRequested(); break;
    case Qt::Key_N: showIteration(m_iteration + 1); break;
    case Qt::Key_P: showIteration(std::max(0, m_iteration - 1)); break;
    case Qt::Key_Escape:
      setRange(0, 0);
      select({});
      break;
    default: QWidget::keyPressEvent(event);
  }
}

QString TimelineView::describe(const SpanRef& ref) const {
  const SpanDetails d = spanDetails(*m_data, ref, false);  // hover and status: no relations scan
  if (!d.ref.valid()) return {};
  QString text =
      QStringLiteral("rank %1 · %2 · %3 · %4")
          .arg(d.rank)
          .arg(QString::fromStdString(d.thread), QString::fromStdString(d.kind), QString::fromStdString(d.name));
  if (d.instant) {
    text += tr(" · at %1").arg(QString::fromStdString(formatDuration(d.start_ns)));
  } else {
    text += tr(" · %1, from %2")
                .arg(QString::fromStdString(formatDuration(d.duration_ns)),
                     QString::fromStdString(formatDuration(d.start_ns)));
    if (d.unfinished) text += tr(" · never finished");
    if (const TimelineSpan* s = m_data->resolve(ref); s && s->cut_short)
      text += tr(" · cut short by an error (its rank failed here)");
  }
  if (d.iteration >= 0) text += tr(" · iteration %1").arg(d.iteration);
  if (d.bucket >= 0) text += tr(" · bucket %1").arg(d.bucket);
  if (!d.param_name.empty()) text += tr(" · %1").arg(QString::fromStdString(d.param_name));
  if (d.bytes >= 0) text += tr(" · %1 bytes").arg(d.bytes);
  return text;
}

}  // namespace ddpscope::gui
