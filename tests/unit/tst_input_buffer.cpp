// Input buffers: a node used along two paths gets both gradients summed before it runs
// once.
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

class TestInputBuffer : public QObject {
  Q_OBJECT
 private slots:

  void testDiamondSumsBothPaths() {
    // y = x*x + 3x uses x along two paths; dy/dx = 2x + 3 needs both contributions
    // to arrive before AccumulateGrad runs once.
    Tensor x = leaf({1, 2});
    int accumulations = 0;
    autograd::register_post_accumulate_grad_hook(x, [&](const Tensor&) { ++accumulations; });
    sum(add(mul(x, x), mul_scalar(x, 3))).backward();
    QCOMPARE(x.grad().to_vector<double>(), (std::vector<double>{5, 7}));
    QCOMPARE(accumulations, 1);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestInputBuffer)
#include "tst_input_buffer.moc"
