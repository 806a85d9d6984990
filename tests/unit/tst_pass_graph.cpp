// The graph of a backward pass recorded for the run file: every node reachable from the
// pass's starts with its dependency count and edges, nothing while probes are off, and no
// more passes than limit_recorded_graphs() allows.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include "autograd/ops.h"
#include "dist_autograd/dist_autograd.h"
#include "dist_autograd/pass_graph.h"
#include "probe_session.h"
#include "run_store_reader.h"
#include "test_registry.h"

using namespace ddpscope;

class TestPassGraph : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

 private slots:
  void testEveryNodeFromTheStartsWithItsCount() {
    Tensor x = Tensor::from_vector<double>({1, 2}, {2}).set_requires_grad(true);
    Tensor y = sum(add(mul(x, x), x));  // x feeds two nodes: AccumulateGrad waits for 2
    QVERIFY(!dist_autograd::record_pass_graph(1, 1, {y.grad_fn().get()}, {}));  // probes off
    const std::string file = m_dir.filePath("pass.ddprun").toStdString();
    {
      probes::ProbeSession session({.rank = 0, .run_file = file, .run = {.world_size = 1, .model = "t"}});
      dist_autograd::limit_recorded_graphs(1);
      autograd::Node* root = y.grad_fn().get();
      autograd::Node* accumulate = nullptr;
      std::unordered_map<autograd::Node*, int> deps;
      // Sum -> Add -> (Mul -> AccumulateGrad twice, AccumulateGrad): the leaf's node has 3 inputs.
      std::vector<autograd::Node*> todo{root};
      while (!todo.empty()) {
        autograd::Node* n = todo.back();
        todo.pop_back();
        for (const auto& e : n->next_edges()) {
          if (!e.is_valid()) continue;
          if (deps[e.function.get()]++ == 0) todo.push_back(e.function.get());
          if (e.function->kind() == autograd::NodeKind::AccumulateGrad) accumulate = e.function.get();
        }
      }
      QVERIFY(accumulate);
      QVERIFY(dist_autograd::record_pass_graph(7, 3, {root}, deps));
      QVERIFY(!dist_autograd::record_pass_graph(7, 4, {root}, deps));  // past the limit of 1
      session.finish("finished");
      dist_autograd::limit_recorded_graphs(-1);
    }
    probes::RunStoreReader run(file);
    const auto g = run.graph(0, 7, 3);
    QCOMPARE(g.nodes.size(), size_t{4});  // Sum, Add, Mul, AccumulateGrad
    int64_t accumulated = -1;
    for (const auto& n : g.nodes)
      if (n.kind == "accumulate_grad") accumulated = n.deps;
    QCOMPARE(accumulated, int64_t{3});
    QCOMPARE(g.edges.size(), size_t{5});  // sum->add, add->mul, add->acc, mul->acc twice
    QVERIFY(run.graph(0, 7, 4).nodes.empty());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestPassGraph)
#include "tst_pass_graph.moc"
