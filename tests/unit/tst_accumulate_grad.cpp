// AccumulateGrad: gradients add up across backward calls, and land where the user
// asked (.grad, or the destinations a caller gives).
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

class TestAccumulateGrad : public QObject {
  Q_OBJECT
 private slots:

  void testGradientsAccumulateAcrossBackwards() {
    Tensor x = leaf({1, 2});
    sum(mul_scalar(x, 2)).backward();
    sum(mul_scalar(x, 3)).backward();
    QCOMPARE(x.grad().to_vector<double>(), (std::vector<double>{5, 5}));
  }

  // A Linear's weight gradient goes straight into an offered destination while .grad is
  // empty, and only once per backward; the values equal the plain computation.
  void testGradientDestinations() {
    Generator gen(7);
    const Tensor x = randn({5, 3}, DType::F32, &gen), x2 = randn({5, 3}, DType::F32, &gen);
    const Tensor w = randn({4, 3}, DType::F32, &gen).set_requires_grad(true);
    auto grad_of = [&](int uses) {  // uses 2: w's two gradients differ
      Tensor out = linear(x, w);
      if (uses == 2) out = add(out, linear(x2, w));
      sum(mul(out, out)).backward();
      return w.grad();
    };
    const Tensor once = grad_of(1).clone();
    w.set_grad(Tensor());
    const Tensor twice = grad_of(2).clone();
    w.set_grad(Tensor());

    const Tensor slot = Tensor::zeros({4, 3}, DType::F32);
    autograd::offer_gradient_destination(w, slot);
    const Tensor g1 = grad_of(1);
    QVERIFY2(g1.is_same_view_as(slot), "an empty .grad is computed into the destination");
    DDPSCOPE_COMPARE_TENSORS(g1, once, 1e-6, 0);
    // Taken once: with .grad set, the next backward accumulates into .grad as usual.
    const Tensor accumulated = grad_of(1);
    DDPSCOPE_COMPARE_TENSORS(accumulated, kernels::affine(once, 2, 0), 1e-5, 0);

    // A weight used twice: one of its two gradients may go to the destination, and
    // their sum is still right.
    w.set_grad(Tensor());
    autograd::offer_gradient_destination(w, slot);
    DDPSCOPE_COMPARE_TENSORS(grad_of(2), twice, 1e-5, 0);

    // grad() returns gradients to the caller: never a view of the destination.
    w.set_grad(Tensor());
    const Tensor fresh_slot = Tensor::zeros({4, 3}, DType::F32);
    autograd::offer_gradient_destination(w, fresh_slot);
    const Tensor out = linear(x, w);
    const Tensor g = autograd::grad({sum(mul(out, out))}, {w})[0];
    QVERIFY(!g.shares_storage_with(fresh_slot));
    DDPSCOPE_COMPARE_TENSORS(g, once, 1e-6, 0);
    QCOMPARE(kernels::max_abs_diff(fresh_slot, Tensor::zeros({4, 3}, DType::F32)), 0.0);
    QVERIFY(!w.grad().defined());
    autograd::offer_gradient_destination(w, Tensor());

    // A destination of another shape is not used; a withdrawn one neither.
    w.set_grad(Tensor());
    autograd::offer_gradient_destination(w, Tensor::zeros({3, 4}, DType::F32));
    QVERIFY(!grad_of(1).shares_storage_with(slot));
    w.set_grad(Tensor());
    autograd::offer_gradient_destination(w, slot);
    autograd::offer_gradient_destination(w, Tensor());
    QVERIFY(!grad_of(1).shares_storage_with(slot));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestAccumulateGrad)
#include "tst_accumulate_grad.moc"
