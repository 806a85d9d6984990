// The autograd graph view: a local graph drawn whole, a click on a node saying what it is,
// what it waits for and how long it ran, a graph over its size collapsed by module (and
// expanded again), and the zoom a caller sets kept.
#include <QtTest/QtTest>

#include "graph_view.h"
#include "test_registry.h"

using namespace ddpscope::gui;

namespace {

// The loss's backward (module "module"), then layers.0: a Linear and its two AccumulateGrads.
GraphData smallGraph() {
  GraphData g;
  g.iteration = 3;
  g.nodes = {{1, "MseLossBackward", "operation", 0, 1, 0.004, "module"},
             {2, "AddmmBackward", "operation", 1, 2, 0.012, "module.layers.0"},
             {3, "AccumulateGrad(layers.0.weight)", "accumulate_grad", 1, -1, -1, "module.layers.0"},
             {4, "AccumulateGrad(layers.0.bias)", "accumulate_grad", 1, -1, 0.001, "module.layers.0"}};
  g.edges = {{1, 2}, {2, 3}, {2, 4}};
  return g;
}

}  // namespace

class TestGraphView : public QObject {
  Q_OBJECT

 private slots:
  void testAClickSaysWhatTheNodeIs() {
    GraphView view;
    view.resize(900, 600);
    view.setGraph(smallGraph());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY2(view.layoutError().isEmpty(), qPrintable(view.layoutError()));
    QCOMPARE(view.shown().nodes.size(), size_t{4});
    view.fitToView();
    for (size_t i = 0; i < 4; ++i)
      QVERIFY2(view.nodeFullyShown(i), qPrintable(QString::number(i)));
    QSignalSpy clicked(&view, &GraphView::nodeClicked);
    QSignalSpy index(&view, &GraphView::nodeIndexClicked);
    QTest::mouseClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, view.mapFromScene(view.nodeCenter(1)));
    QCOMPARE(index.count(), 1);
    QCOMPARE(index.at(0).at(0).toInt(), 1);
    QCOMPARE(clicked.at(0).at(0).toString(),
             QString("AddmmBackward (operation): waits for 1 gradient; ran 0.012 ms in iteration 3"));
    QTest::mouseClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, view.mapFromScene(view.nodeCenter(2)));
    QVERIFY2(clicked.at(1).at(0).toString().endsWith("; no execution recorded"),
             qPrintable(clicked.at(1).at(0).toString()));
  }

  void testABigGraphIsCollapsedByModule() {
    GraphView view;
    view.setGraph(smallGraph(), 3);  // more than 3 nodes: collapsed
    QVERIFY(view.collapsed());
    QVERIFY(view.shown().nodes.size() < 4);
    bool module = false;
    for (const GraphNode& n : view.shown().nodes)
      module |= n.kind == "module" && n.members == 3;
    QVERIFY2(module, "the three nodes of layers.0 fold into one");
    view.setCollapsed(false);
    QVERIFY(!view.collapsed());
    QCOMPARE(view.shown().nodes.size(), size_t{4});
  }

  void testTheZoomIsKept() {
    GraphView view;
    view.resize(600, 400);
    view.setGraph(smallGraph());
    view.setZoom(2.5);
    QVERIFY(std::abs(view.zoom() - 2.5) < 1e-9);
  }
};

DDPSCOPE_TEST_MAIN(TestGraphView)
#include "tst_graph_view.moc"
