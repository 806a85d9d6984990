// Graph data: a distributed backward pass's graphs joined across workers by their
// send/recv pairs.
#include <QtTest/QtTest>

#include <map>

#include "graph_data.h"
#include "graph_layout.h"
#include "gui_test_runs.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestGraphData : public ScratchTest {
  Q_OBJECT

 private slots:

  void testDistributedGraphJoinsWorkersBySendRecvPairs() {
    const std::string file = path("seed_graphs.ddprun");
    testing::write_seed_graphs(file);
    ddpscope::probes::RunStoreReader reader(file);
    const auto choices = listDistGraphs(reader);
    QCOMPARE(choices.size(), size_t{1});
    QCOMPARE(choices[0].ranks, (std::vector<int>{0, 1}));
    QCOMPARE(describeChoice(choices[0]), std::string("context 0:1 · pass 0:1 · workers 0, 1"));
    const GraphData g = loadDistGraph(reader, 1, 1);
    QVERIFY(g.distributed);
    QCOMPARE(g.nodes.size(), size_t{11});
    QCOMPARE(g.edges.size(), size_t{6 + 3 + 2});  // each worker's, and the two messages back
    auto find = [&](int rank, const std::string& op) {
      for (const auto& n : g.nodes)
        if (n.rank == rank && n.op == op) return n.id;
      return int64_t{-1};
    };
    auto has_edge = [&](int64_t a, int64_t b) {
      return std::any_of(g.edges.begin(), g.edges.end(), [&](const GraphEdge& e) { return e.src == a && e.dst == b; });
    };
    // t3's gradient: worker 0's recv -> worker 1's send; t1's and t2's: worker 1's recv ->
    // worker 0's send.
    QVERIFY(has_edge(find(0, "RecvRpcBackward"), find(1, "SendRpcBackward")));
    QVERIFY(has_edge(find(1, "RecvRpcBackward"), find(0, "SendRpcBackward")));
    const auto& add = g.nodes[static_cast<size_t>(find(1, "AddBackward"))];
    QCOMPARE(add.exec_ms, 0.002);
    QCOMPARE(g.nodes[static_cast<size_t>(find(1, "RecvRpcBackward"))].deps, int64_t{2});
    // Collapsed: modules per worker, the four send/recv joints kept with their messages.
    const GraphData c = collapseByModule(g);
    QCOMPARE(std::count_if(c.nodes.begin(), c.nodes.end(),
                           [](const GraphNode& n) { return n.kind == "send" || n.kind == "recv"; }),
             4);
    for (const auto& n : c.nodes)
      QVERIFY2(n.rank == 0 || n.rank == 1, n.op.c_str());
    // Laid out as one cluster per worker, each holding its nodes.
    const GraphLayout layout = layoutGraph(g);
    QVERIFY2(layout.error.empty(), layout.error.c_str());
    QCOMPARE(layout.clusters.size(), size_t{2});
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ClusterBox& box = layout.clusters[static_cast<size_t>(g.nodes[i].rank)];
      const NodeBox& n = layout.nodes[i];
      QVERIFY(n.x >= box.x && n.x <= box.x + box.w && n.y >= box.y && n.y <= box.y + box.h);
    }
    QVERIFY(nodeLabel(g.nodes[static_cast<size_t>(find(0, "SendRpcBackward"))]).find("msg 0:1 · worker 1") !=
            std::string::npos);
    QVERIFY(nodeLabel(g.nodes[static_cast<size_t>(find(0, "RecvRpcBackward"))]).find("msg reply to 0:1 · worker 1") !=
            std::string::npos);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestGraphData)
#include "tst_graph_data.moc"
