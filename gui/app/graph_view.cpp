#include "graph_view.h"

#include <algorithm>

#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QMouseEvent>
#include <QPainterPath>
#include <QWheelEvent>

#include "graph_layout.h"
#include "plural.h"

namespace ddpscope::gui {
namespace {

QColor colourOf(const std::string& kind) {
  if (kind == "accumulate_grad") return QColor(0xb8, 0xe0, 0xb0);
  if (kind == "send" || kind == "recv") return QColor(0xf8, 0xc8, 0x8c);
  if (kind == "module") return QColor(0xd6, 0xc8, 0xef);
  if (kind == "root") return QColor(0xdd, 0xdd, 0xdd);
  return QColor(0xb4, 0xcd, 0xea);  // operation
}

}  // namespace

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent), m_scene(new QGraphicsScene(this)) {
  setScene(m_scene);
  setRenderHint(QPainter::Antialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setBackgroundBrush(Qt::white);
}

void GraphView::setGraph(const GraphData& graph, int collapseAbove) {
  m_full = graph;
  m_shown = static_cast<int>(graph.nodes.size()) > collapseAbove ? collapseByModule(graph) : graph;
  rebuild();
}

void GraphView::setCollapsed(bool collapsed) {
  if (collapsed == m_shown.collapsed) return;
  m_shown = collapsed ? collapseByModule(m_full) : m_full;
  rebuild();
}

QPointF GraphView::nodeCenter(size_t index) const { return index < m_centers.size() ? m_centers[index] : QPointF(); }

void GraphView::rebuild() {
  m_scene->clear();
  m_centers.clear();
  m_boxes.clear();
  m_labels.clear();
  m_error.clear();
  if (m_shown.nodes.empty()) {
    m_scene->addText(tr("No autograd graph in this run (probes record the first iteration's)."));
    return;
  }
  const GraphLayout layout = layoutGraph(m_shown);
  if (!layout.error.empty()) {
    m_error = QString::fromStdString(layout.error);
    m_scene->addText(m_error);
    return;
  }
  // A distributed graph's workers: a tinted box each, labelled, under everything else.
  for (const ClusterBox& cb : layout.clusters) {
    const QColor tint = QColor::fromHsv((cb.rank * 67) % 360, 28, 250);
    auto* box = m_scene->addRect(cb.x, cb.y, cb.w, cb.h, QPen(tint.darker(140)), QBrush(tint));
    box->setZValue(-1);
    auto* label = m_scene->addText(tr("worker %1").arg(cb.rank));
    label->setPos(cb.x + 4, cb.y + 2);
    label->setZValue(-1);
  }
  QPen edgePen(QColor(0x55, 0x55, 0x55));
  edgePen.setWidthF(1.0);
  for (const EdgePath& e : layout.edges) {
    if (e.points.size() < 4) continue;
    QPainterPath path(QPointF(e.points[0].first, e.points[0].second));
    for (size_t i = 1; i + 2 < e.points.size(); i += 3) {
      path.cubicTo(QPointF(e.points[i].first, e.points[i].second),
                   QPointF(e.points[i + 1].first, e.points[i + 1].second),
                   QPointF(e.points[i + 2].first, e.points[i + 2].second));
    }
    const QPointF end(e.points.back().first, e.points.back().second);
    const QPointF tip = e.arrow ? QPointF(e.arrow_tip.first, e.arrow_tip.second) : end;
    path.lineTo(tip);
    m_scene->addPath(path, edgePen);
    m_scene->addEllipse(tip.x() - 2, tip.y() - 2, 4, 4, edgePen, QBrush(edgePen.color()));
  }
  QFont font;
  font.setPointSizeF(7.5);
  for (size_t i = 0; i < m_shown.nodes.size(); ++i) {
    const NodeBox& b = layout.nodes[i];
    const GraphNode& n = m_shown.nodes[i];
    auto* rect = m_scene->addRect(b.x - b.w / 2, b.y - b.h / 2, b.w, b.h, QPen(QColor(0x44, 0x44, 0x44)),
                                  QBrush(colourOf(n.kind)));
    rect->setData(0, static_cast<qulonglong>(i));
    auto* text = m_scene->addText(QString::fromStdString(nodeLabel(n)), font);
    text->setData(0, static_cast<qulonglong>(i));
    const QRectF tb = text->boundingRect();
    text->setPos(b.x - tb.width() / 2, b.y - tb.height() / 2);
    m_centers.emplace_back(b.x, b.y);
    m_boxes.push_back(rect);
    m_labels.push_back(text);
  }
  m_scene->setSceneRect(m_scene->itemsBoundingRect().adjusted(-10, -10, 10, 10));
  m_autoFit = true;
  fitToView();
}

// The whole graph when it can be read whole; otherwise its full width at a readable scale
// from the loss (node 0, the root), where backward starts. Redone as the view is resized
// until the user zooms, so a graph laid out while its tab was hidden or narrow is not
// left cut or squeezed.
void GraphView::fitToView() {
  const QRectF scene = m_scene->sceneRect();
  if (scene.isEmpty() || viewport()->width() < 2 || viewport()->height() < 2) return;
  constexpr double kLargest = 1.25, kSmallestReadable = 0.55;
  const double byWidth = viewport()->width() / scene.width(), byHeight = viewport()->height() / scene.height();
  double s = std::min({byWidth, byHeight, kLargest});
  resetTransform();
  if (s >= kSmallestReadable || m_centers.empty()) {
    scale(s, s);
    centerOn(scene.center());
    return;
  }
  s = std::clamp(byWidth, kSmallestReadable, 1.0);
  scale(s, s);
  centerOn(scene.center().x(), m_centers.front().y() + viewport()->height() / (2.5 * s));
}

double GraphView::zoom() const { return m_autoFit ? 0 : transform().m11(); }

void GraphView::setZoom(double scale) {
  m_autoFit = false;
  const QPointF centre = mapToScene(viewport()->rect().center());
  resetTransform();
  this->scale(scale, scale);
  centerOn(centre);
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (m_autoFit) fitToView();
}

bool GraphView::nodeFullyShown(size_t index) const {
  if (index >= m_boxes.size()) return false;
  const QRect box = mapFromScene(m_boxes[index]->sceneBoundingRect()).boundingRect();
  return viewport()->rect().contains(box);
}

void GraphView::setMarks(const std::vector<NodeMark>& marks) {
  for (size_t i = 0; i < m_boxes.size(); ++i) {
    const GraphNode& n = m_shown.nodes[i];
    QColor fill = colourOf(n.kind);
    QPen pen(QColor(0x44, 0x44, 0x44));
    std::string label = nodeLabel(n);
    if (i < marks.size()) {
      const NodeMark& m = marks[i];
      GraphNode now = n;
      now.deps = m.counter;
      now.exec_ms = -1;  // the lesson shows counts; times are in the explanation
      label = nodeLabel(now);
      if (m.executed) fill = QColor(0xe6, 0xe6, 0xe6);  // done: out of the way
      if (m.active) pen = QPen(QColor(0x2c, 0xa0, 0x2c), 3);
      if (m.highlight) pen = QPen(QColor(0x1f, 0x77, 0xb4), 3);
      if (m.running) pen = QPen(QColor(0xd6, 0x27, 0x28), 4);
    }
    m_boxes[i]->setBrush(fill);
    m_boxes[i]->setPen(pen);
    m_labels[i]->setPlainText(QString::fromStdString(label));
  }
  // The node that runs now is kept in view: a step must show what it talks about.
  for (size_t i = 0; i < marks.size() && i < m_boxes.size(); ++i) {
    if (marks[i].running) ensureVisible(m_boxes[i], 24, 24);
  }
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  for (QGraphicsItem* item : items(event->position().toPoint())) {
    const QVariant v = item->data(0);
    if (!v.isValid()) continue;
    const GraphNode& n = m_shown.nodes[v.toULongLong()];
    QString text = n.kind == "module" ? tr("%1: %2 autograd nodes").arg(QString::fromStdString(n.op)).arg(n.members)
                                      : tr("%1 (%2): waits for %3")
                                            .arg(QString::fromStdString(n.op), QString::fromStdString(n.kind))
                                            .arg(countOf(n.deps, tr("gradient")));
    if (n.rank >= 0) text = tr("worker %1: ").arg(n.rank) + text;
    if (n.msg_id >= 0) {
      text +=
          tr("; message %1, other end on worker %2").arg(QString::fromStdString(formatGlobalId(n.msg_id))).arg(n.peer);
    }
    const QString when = m_shown.distributed
                             ? tr("pass %1").arg(QString::fromStdString(formatGlobalId(m_shown.iteration)))
                             : tr("iteration %1").arg(m_shown.iteration);
    text +=
        n.exec_ms >= 0 ? tr("; ran %1 ms in %2").arg(n.exec_ms, 0, 'f', 3).arg(when) : tr("; no execution recorded");
    emit nodeClicked(text);
    emit nodeIndexClicked(static_cast<int>(v.toULongLong()));
    break;
  }
  QGraphicsView::mousePressEvent(event);
}

void GraphView::wheelEvent(QWheelEvent* event) {
  m_autoFit = false;  // the user's zoom is kept across resizes
  const double factor = event->angleDelta().y() > 0 ? 1.2 : 1 / 1.2;
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  scale(factor, factor);
}

}  // namespace ddpscope::gui
