// Graph layout: an autograd graph collapsed to what a reader needs and laid out in layers.
#include <QtTest/QtTest>

#include <map>

#include "graph_data.h"
#include "graph_layout.h"
#include "gui_test_runs.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestGraphLayout : public ScratchTest {
  Q_OBJECT

 private slots:

  void testGraphCollapseAndLayout() {
    // loss -> linear2 -> {acc(l2.weight), relu -> linear1 -> acc(l1.weight)}
    GraphData g;
    g.nodes = {{0, "MseLossBackward", "operation", 0, 10, 0.5, {}, 1},
               {1, "LinearBackward", "operation", 1, 9, 0.2, {}, 1},
               {2, "AccumulateGrad(net.l2.weight)", "accumulate_grad", 1, 8, 0.01, {}, 1},
               {3, "ReluBackward", "operation", 1, 7, 0.1, {}, 1},
               {4, "LinearBackward", "operation", 1, 6, 0.3, {}, 1},
               {5, "AccumulateGrad(net.l1.weight)", "accumulate_grad", 1, 5, 0.02, {}, 1}};
    g.edges = {{0, 1}, {1, 2}, {1, 3}, {3, 4}, {4, 5}};
    QCOMPARE(moduleOfParameter("net.l2.weight"), std::string("net.l2"));
    const GraphData c = collapseByModule(g);
    QVERIFY(c.collapsed);
    // Operations join the module their gradient reaches first: relu's gradient flows
    // into linear1, so it joins net.l1; the loss and linear2 reach net.l2's weight.
    std::map<std::string, const GraphNode*> by_name;
    for (const auto& n : c.nodes)
      by_name[n.op] = &n;
    QVERIFY(by_name.count("net.l1") && by_name.count("net.l2"));
    QCOMPARE(by_name["net.l1"]->members, int64_t(3));  // relu, linear1, its accumulator
    QCOMPARE(by_name["net.l2"]->members, int64_t(3));  // loss, linear2, its accumulator
    QCOMPARE(by_name["net.l2"]->exec_ms, 0.5 + 0.2 + 0.01);
    QCOMPARE(int(c.edges.size()), 1);  // net.l2 -> net.l1, no self-loops
    const GraphLayout layout = layoutGraph(g);
    QVERIFY2(layout.error.empty(), layout.error.c_str());
    QCOMPARE(layout.nodes.size(), g.nodes.size());
    QCOMPARE(layout.edges.size(), g.edges.size());
    // Top to bottom: gradients flow down from the loss.
    QVERIFY(layout.nodes[0].y < layout.nodes[1].y);
    QVERIFY(layout.nodes[1].y < layout.nodes[4].y);
    QVERIFY(layout.nodes[4].y < layout.nodes[5].y);
    // The parameter under its op, on its own line: the node is taller, not wider.
    QVERIFY(nodeLabel(g.nodes[2]).starts_with("AccumulateGrad\nnet.l2.weight\n"));
    QVERIFY(layout.nodes[2].h > layout.nodes[1].h);
    for (const auto& e : layout.edges)
      QVERIFY(e.points.size() >= 4);
    QVERIFY(nodeLabel(g.nodes[1]).find("deps 1") != std::string::npos);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestGraphLayout)
#include "tst_graph_layout.moc"
