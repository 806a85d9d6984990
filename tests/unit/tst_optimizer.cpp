// Optimizers against hand-computed updates, and zero_grad.
#include <QtTest/QtTest>

#include "optim/optimizer.h"
#include "test_helpers.h"
#include "test_registry.h"

using namespace ddpscope;

namespace {
Tensor param(std::vector<double> v) {
  return Tensor::from_vector<double>(v, {int64_t(v.size())}).set_requires_grad(true);
}
void set_grad(const Tensor& p, std::vector<double> g) {
  p.set_grad(Tensor::from_vector<double>(g, {int64_t(g.size())}));
}
}  // namespace

class TestOptimizer : public QObject {
  Q_OBJECT
 private slots:
  void testSgdMomentumWeightDecay() {
    Tensor p = param({1.0, -2.0});
    optim::SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
    set_grad(p, {0.5, 0.5});
    opt.step();
    // d = g + wd*p = (0.51, 0.48); buf = d; p -= lr*buf
    DDPSCOPE_COMPARE_TENSORS(p, Tensor::from_vector<double>({1 - 0.051, -2 - 0.048}, {2}), 1e-12, 0);
    set_grad(p, {0.5, 0.5});
    opt.step();
    const double d0 = 0.5 + 0.01 * 0.949, d1 = 0.5 + 0.01 * -2.048;
    const double b0 = 0.9 * 0.51 + d0, b1 = 0.9 * 0.48 + d1;
    DDPSCOPE_COMPARE_TENSORS(p, Tensor::from_vector<double>({0.949 - 0.1 * b0, -2.048 - 0.1 * b1}, {2}), 1e-12, 0);
  }

  void testSgdNesterov() {
    Tensor p = param({1.0});
    optim::SGD opt({p}, {.lr = 0.1, .momentum = 0.5, .nesterov = true});
    set_grad(p, {1.0});
    opt.step();  // buf = 1; step = g + m*buf = 1.5
    QCOMPARE(p.item<double>(), 1.0 - 0.15);
  }

  void testAdamFirstSteps() {
    Tensor p = param({1.0, 2.0});
    optim::Adam opt({p}, {.lr = 0.01});
    set_grad(p, {0.3, -4.0});
    opt.step();
    // First step of Adam moves each weight by lr * sign(g) (bias-corrected m/sqrt(v)).
    DDPSCOPE_COMPARE_TENSORS(p, Tensor::from_vector<double>({0.99, 2.01}, {2}), 1e-7, 0);
    set_grad(p, {0.3, -4.0});
    opt.step();
    DDPSCOPE_COMPARE_TENSORS(p, Tensor::from_vector<double>({0.98, 2.02}, {2}), 1e-7, 0);
  }

  void testAdamWDecouplesDecay() {
    Tensor p = param({1.0});
    Tensor q = param({1.0});
    optim::AdamW adamw({p}, {.lr = 0.1, .weight_decay = 0.5});
    optim::Adam adam({q}, {.lr = 0.1, .weight_decay = 0.5});
    set_grad(p, {0.0});
    set_grad(q, {0.0});
    adamw.step();
    adam.step();
    QVERIFY(std::fabs(p.item<double>() - 0.95) < 1e-12);  // pure shrink, zero gradient
    QVERIFY(std::fabs(q.item<double>() - 0.9) < 1e-7);    // L2 gradient 0.5 -> step lr
  }

  void testSkipsParametersWithoutGradient() {
    Tensor p = param({1.0}), q = param({2.0});
    optim::SGD opt({p, q}, {.lr = 1.0});
    set_grad(p, {1.0});
    opt.step();
    QCOMPARE(p.item<double>(), 0.0);
    QCOMPARE(q.item<double>(), 2.0);
  }

  // Stepping parameters in groups (DDP's fused optimizer, a bucket at a time) equals
  // one step of all, and Adam's bias correction counts steps per parameter.
  void testStepParamsInGroupsEqualsStep() {
    for (const bool adam : {false, true}) {
      Tensor a = param({1.0, -2.0}), b = param({0.5}), c = param({3.0});
      Tensor a2 = param({1.0, -2.0}), b2 = param({0.5}), c2 = param({3.0});
      auto make = [adam](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
        if (adam) return std::make_unique<optim::Adam>(std::move(ps), optim::AdamOptions{.lr = 0.05});
        return std::make_unique<optim::SGD>(std::move(ps), optim::SgdOptions{.lr = 0.1, .momentum = 0.9});
      };
      auto whole = make({a, b, c}), grouped = make({a2, b2, c2});
      for (int step = 0; step < 3; ++step) {
        for (const Tensor& p : {a, a2})
          set_grad(p, {0.3 * step + 0.1, -0.7});
        for (const Tensor& p : {b, b2})
          set_grad(p, {1.5 - step});
        for (const Tensor& p : {c, c2})
          set_grad(p, {0.25});
        whole->step();
        const std::vector<size_t> last{2}, first_two{1, 0};
        grouped->step_params(last);
        grouped->step_params(first_two);
      }
      QCOMPARE(kernels::max_abs_diff(a, a2), 0.0);
      QCOMPARE(kernels::max_abs_diff(b, b2), 0.0);
      QCOMPARE(kernels::max_abs_diff(c, c2), 0.0);
    }
    Tensor p = param({1.0}), q = param({1.0});
    optim::Adam opt({p, q}, {.lr = 0.1});
    set_grad(p, {1.0});
    opt.step();  // q has no gradient: not stepped, its count stays 0
    set_grad(q, {1.0});
    opt.step();
    QCOMPARE(opt.steps(0), int64_t{2});
    QCOMPARE(opt.steps(1), int64_t{1});
    // q's first step is a first step (bias-corrected): it moves by lr, like p's did.
    QVERIFY(std::fabs(q.item<double>() - 0.9) < 1e-7);
    const std::vector<size_t> bad{2};
    QVERIFY_THROWS_EXCEPTION(Error, opt.step_params(bad));
  }

  void testZeroGrad() {
    Tensor p = param({1.0});
    optim::SGD opt({p}, {.lr = 1.0});
    set_grad(p, {3.0});
    opt.zero_grad(false);
    QCOMPARE(p.grad().item<double>(), 0.0);
    opt.zero_grad(true);
    QVERIFY(!p.grad().defined());
  }

  // The state dict holds each stepped parameter's state; loading it into a fresh
  // optimizer continues exactly where the first left off.
  void testStateDictRoundTrip() {
    for (const bool adam : {false, true}) {
      Tensor a = param({1.0, -2.0}), b = param({0.5});
      Tensor a2 = param({1.0, -2.0}), b2 = param({0.5});
      auto make = [adam](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
        if (adam) return std::make_unique<optim::Adam>(std::move(ps), optim::AdamOptions{.lr = 0.05});
        return std::make_unique<optim::SGD>(std::move(ps), optim::SgdOptions{.lr = 0.1, .momentum = 0.9});
      };
      auto first = make({a, b});
      for (int step = 0; step < 3; ++step) {
        set_grad(a, {0.3 * step + 0.1, -0.7});
        if (step > 0) set_grad(b, {1.5 - step});  // b has no state after the first step
        first->step();
      }
      const nn::StateDict state = first->state_dict();
      QCOMPARE(int(state.size()), adam ? 6 : 2);
      QCOMPARE(state.front().first, std::string(adam ? "state.0.step" : "state.0.momentum_buffer"));
      if (adam) QCOMPARE(state.front().second.item<double>(), 3.0);
      a2.copy_(a);
      b2.copy_(b);
      auto second = make({a2, b2});
      second->load_state_dict(state);
      QCOMPARE(second->state_bytes(), first->state_bytes());
      for (const auto& opt : {first.get(), second.get()}) {
        set_grad(opt->params()[0], {0.2, 0.4});
        set_grad(opt->params()[1], {0.2});
        opt->step();
      }
      QCOMPARE(kernels::max_abs_diff(a, a2), 0.0);
      QCOMPARE(kernels::max_abs_diff(b, b2), 0.0);
    }
  }

  void testBadStateDictIsRefusedWhole() {
    Tensor p = param({1.0, 2.0});
    optim::Adam opt({p}, {.lr = 0.1});
    set_grad(p, {1.0, 1.0});
    opt.step();
    const int64_t before = opt.state_bytes();
    auto refused = [&](nn::StateDict bad, const char* words) {
      try {
        opt.load_state_dict(bad);
      } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains(words), e.what());
        QCOMPARE(opt.state_bytes(), before);  // checked before anything changed
        QCOMPARE(opt.steps(0), int64_t{1});
        return;
      }
      QFAIL(qPrintable(QString("accepted: expected an error with '%1'").arg(words)));
    };
    refused({{"state.1.exp_avg", Tensor::zeros({2}, DType::F64)}}, "names parameter 1");
    refused({{"state.0.momentum_buffer", Tensor::zeros({2}, DType::F64)}}, "another kind of optimizer");
    refused({{"state.0.exp_avg", Tensor::zeros({3}, DType::F64)}}, "but parameter 0");
    refused({{"exp_avg", Tensor::zeros({2}, DType::F64)}}, "state.<index>.<field>");
    refused({{"state.x.exp_avg", Tensor::zeros({2}, DType::F64)}}, "state.<index>.<field>");
  }

  void testRejectsNonLeaf() {
    Tensor plain = Tensor::zeros({1}, DType::F64);
    QVERIFY_THROWS_EXCEPTION(Error, optim::SGD({plain}, {}));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestOptimizer)
#include "tst_optimizer.moc"
