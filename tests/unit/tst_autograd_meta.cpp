// A tensor's autograd state: retain_grad keeps the gradient of an intermediate.
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

class TestAutogradMeta : public QObject {
  Q_OBJECT
 private slots:

  void testRetainGradOnIntermediate() {
    Tensor x = leaf({1, 2});
    Tensor h = mul_scalar(x, 3);
    h.retain_grad();
    sum(mul(h, h)).backward();
    QCOMPARE(h.grad().to_vector<double>(), (std::vector<double>{6, 12}));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestAutogradMeta)
#include "tst_autograd_meta.moc"
