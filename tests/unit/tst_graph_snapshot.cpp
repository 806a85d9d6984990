// Graph snapshots: the nodes of a backward graph with their dependency counts.
#include <QtTest/QtTest>

#include <thread>

#include "autograd/accumulate_grad.h"
#include "autograd/autograd_meta.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/graph_snapshot.h"
#include "autograd/ops.h"
#include "tensor/kernels.h"
#include "test_helpers.h"
#include "test_registry.h"

using namespace ddpscope;

using ddpscope::testing::leaf;

class TestGraphSnapshot : public QObject {
  Q_OBJECT
 private slots:

  void testDependencyCountsInSnapshot() {
    Tensor x = leaf({1, 2});
    Tensor h = mul(x, x);
    Tensor y = sum(add(h, h));
    const autograd::GraphSnapshot g = autograd::snapshot_graph({y});
    // Sum <- Add <- Mul (twice) <- AccumulateGrad (twice: x used twice by mul).
    QCOMPARE(int(g.nodes.size()), 4);
    std::map<std::string, int> deps;
    for (auto& n : g.nodes)
      deps[n.name] = n.dependencies;
    QCOMPARE(deps["SumBackward"], 0);
    QCOMPARE(deps["AddBackward"], 1);
    QCOMPARE(deps["MulBackward"], 2);
    QCOMPARE(deps["AccumulateGrad"], 2);
    QCOMPARE(int(g.edges.size()), 5);
    auto acc = std::find_if(g.nodes.begin(), g.nodes.end(),
                            [](auto& n) { return n.kind == autograd::NodeKind::AccumulateGrad; });
    QVERIFY(acc != g.nodes.end());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestGraphSnapshot)
#include "tst_graph_snapshot.moc"
