// Nodes' hooks: tensor hooks run in registration order, one may replace the gradient the
// next sees, then the leaf's hooks and its post-accumulate hook.
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

class TestNode : public QObject {
  Q_OBJECT
 private slots:

  void testHookOrderAndReplacement() {
    Tensor x = leaf({1, 1});
    Tensor h = mul_scalar(x, 2);
    std::vector<std::string> order;
    h.register_hook([&](const Tensor& g) -> std::optional<Tensor> {
      order.push_back("h1");
      return kernels::affine(g, 10, 0);  // replaces the gradient flowing on
    });
    h.register_hook([&](const Tensor& g) -> std::optional<Tensor> {
      order.push_back("h2 sees " + std::to_string(int(g.to_vector<double>()[0])));
      return std::nullopt;
    });
    x.register_hook([&](const Tensor&) -> std::optional<Tensor> {
      order.push_back("leaf");
      return std::nullopt;
    });
    autograd::register_post_accumulate_grad_hook(x, [&](const Tensor& v) {
      order.push_back("post-accumulate grad=" + std::to_string(int(v.grad().to_vector<double>()[0])));
    });
    sum(h).backward();
    QCOMPARE(order, (std::vector<std::string>{"h1", "h2 sees 10", "leaf", "post-accumulate grad=20"}));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestNode)
#include "tst_node.moc"
