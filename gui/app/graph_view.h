// GraphView: the recorded autograd graph laid out by Graphviz's dot: operations,
// AccumulateGrad nodes (with their parameter) and later send/recv nodes in their own
// colours, each with its dependency count and execution time; a click on a node says
// what it is and how long it ran. Graphs larger than a threshold are collapsed by module.
#pragma once

#include <QGraphicsView>

#include "graph_data.h"

class QGraphicsRectItem;
class QGraphicsScene;
class QGraphicsTextItem;

namespace ddpscope::gui {

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(QWidget* parent = nullptr);

  // Collapses by module when the graph has more than `collapseAbove` nodes, unless forced.
  void setGraph(const GraphData& graph, int collapseAbove = 120);
  void setCollapsed(bool collapsed);
  bool collapsed() const { return m_shown.collapsed; }
  const GraphData& shown() const { return m_shown; }
  QString layoutError() const { return m_error; }
  // Scene position of a shown node's centre (for tests and tours).
  QPointF nodeCenter(size_t index) const;
  // Whether a shown node's box lies whole inside the view (for tests).
  bool nodeFullyShown(size_t index) const;
  // Fits the graph to the view (the whole graph when readable); on again after setGraph.
  void fitToView();
  // The scale the user zoomed to (0: fitted); setZoom applies one (a link's) and keeps it.
  double zoom() const;
  void setZoom(double scale);

  // A lesson's state drawn on the shown nodes (the Learn tab): the count left replaces
  // the recorded one, nodes that ran are greyed, the running one is ringed in red, an
  // active SMART send is outlined in green. Empty: as recorded.
  struct NodeMark {
    int64_t counter = -1;
    bool executed = false, running = false, active = false, highlight = false;
  };
  void setMarks(const std::vector<NodeMark>& marks);

 signals:
  void nodeClicked(const QString& description);
  void nodeIndexClicked(int index);  // into shown().nodes

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void rebuild();

  GraphData m_full;
  GraphData m_shown;
  QGraphicsScene* m_scene;
  QString m_error;
  bool m_autoFit = true;  // refit on resize until the user zooms
  std::vector<QPointF> m_centers;
  std::vector<QGraphicsRectItem*> m_boxes;   // per shown node
  std::vector<QGraphicsTextItem*> m_labels;  // per shown node
};

}  // namespace ddpscope::gui
