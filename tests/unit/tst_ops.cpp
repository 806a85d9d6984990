// The differentiable ops (ops.h), checked by finite differences in f64: one row per op.
// The output is contracted with fixed random weights so every entry of the Jacobian is
// exercised.
#include <QtTest/QtTest>

#include <functional>
#include <map>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "tensor/kernels.h"
#include "tensor/random.h"
#include "test_registry.h"

using namespace ddpscope;

namespace {

struct Case {
  std::vector<Tensor> inputs;  // f64 leaves; integer tensors are captured by `fn`
  std::function<Tensor(const std::vector<Tensor>&)> fn;
};

Tensor r(const Shape& s, Generator& g, double scale = 1.0, double shift = 0.0) {
  return kernels::affine(randn(s, DType::F64, &g), scale, shift);
}

// Every case by op name: the rows of testGradient.
using Cases = std::map<std::string, std::function<Case(Generator&)>>;

// Element-wise ops: arithmetic (with broadcasting), scalars and activations.
void add_pointwise_cases(Cases& c) {
  c["add_broadcast"] = [](Generator& g) {
    return Case{{r({3, 4}, g), r({4}, g)}, [](auto& x) { return add(x[0], x[1]); }};
  };
  c["sub_broadcast"] = [](Generator& g) {
    return Case{{r({3, 4}, g), r({3, 1}, g)}, [](auto& x) { return sub(x[0], x[1]); }};
  };
  c["mul"] = [](Generator& g) { return Case{{r({2, 3}, g), r({2, 3}, g)}, [](auto& x) { return mul(x[0], x[1]); }}; };
  c["div"] = [](Generator& g) {
    return Case{{r({2, 3}, g), r({2, 3}, g, 0.2, 2.0)}, [](auto& x) { return div(x[0], x[1]); }};
  };
  c["neg"] = [](Generator& g) { return Case{{r({5}, g)}, [](auto& x) { return neg(x[0]); }}; };
  c["add_scalar"] = [](Generator& g) { return Case{{r({5}, g)}, [](auto& x) { return add_scalar(x[0], 3.0); }}; };
  c["mul_scalar"] = [](Generator& g) { return Case{{r({5}, g)}, [](auto& x) { return mul_scalar(x[0], -1.5); }}; };
  c["pow"] = [](Generator& g) { return Case{{r({5}, g, 0.2, 1.5)}, [](auto& x) { return pow(x[0], 2.5); }}; };
  c["exp"] = [](Generator& g) { return Case{{r({5}, g)}, [](auto& x) { return exp(x[0]); }}; };
  c["log"] = [](Generator& g) { return Case{{r({5}, g, 0.2, 2.0)}, [](auto& x) { return ln(x[0]); }}; };
  c["sqrt"] = [](Generator& g) { return Case{{r({5}, g, 0.2, 2.0)}, [](auto& x) { return sqrt(x[0]); }}; };
  c["tanh"] = [](Generator& g) { return Case{{r({6}, g)}, [](auto& x) { return tanh(x[0]); }}; };
  c["sigmoid"] = [](Generator& g) { return Case{{r({6}, g)}, [](auto& x) { return sigmoid(x[0]); }}; };
  c["relu"] = [](Generator& g) {
    // Keep values away from the kink at 0, where the derivative is undefined.
    Tensor x = r({8}, g);
    for (int i = 0; i < 8; ++i) {
      double& v = x.data<double>()[i];
      if (std::fabs(v) < 0.1) v = 0.5;
    }
    return Case{{x}, [](auto& x) { return relu(x[0]); }};
  };
  c["gelu"] = [](Generator& g) { return Case{{r({6}, g)}, [](auto& x) { return gelu(x[0]); }}; };
}

// Reductions, views and contractions.
void add_shape_cases(Cases& c) {
  c["sum"] = [](Generator& g) { return Case{{r({2, 3}, g)}, [](auto& x) { return sum(x[0]); }}; };
  c["sum_dims"] = [](Generator& g) {
    return Case{{r({2, 3, 4}, g)}, [](auto& x) { return sum(x[0], {0, 2}, false); }};
  };
  c["mean"] = [](Generator& g) { return Case{{r({2, 3}, g)}, [](auto& x) { return mean(x[0]); }}; };
  c["mean_dims_keepdim"] = [](Generator& g) {
    return Case{{r({2, 3}, g)}, [](auto& x) { return mean(x[0], {1}, true); }};
  };
  c["reshape"] = [](Generator& g) {
    return Case{{r({2, 6}, g)}, [](auto& x) { return reshape(transpose(x[0], 0, 1), {3, 4}); }};
  };
  c["cast"] = [](Generator& g) {
    // f64 -> f64 keeps the check exact; the f32/f16 round trips are tested in tst_reducer.
    return Case{{r({2, 3}, g)}, [](auto& x) { return mul(cast(x[0], DType::F64), x[0]); }};
  };
  c["transpose"] = [](Generator& g) { return Case{{r({2, 3}, g)}, [](auto& x) { return transpose(x[0], 0, 1); }}; };
  c["permute"] = [](Generator& g) { return Case{{r({2, 3, 4}, g)}, [](auto& x) { return permute(x[0], {2, 0, 1}); }}; };
  c["narrow"] = [](Generator& g) { return Case{{r({4, 5}, g)}, [](auto& x) { return narrow(x[0], 1, 1, 3); }}; };
  c["matmul"] = [](Generator& g) {
    return Case{{r({3, 4}, g), r({4, 2}, g)}, [](auto& x) { return matmul(x[0], x[1]); }};
  };
  c["matmul_batched"] = [](Generator& g) {
    return Case{{r({2, 3, 4}, g), r({2, 4, 2}, g)}, [](auto& x) { return matmul(x[0], x[1]); }};
  };
  c["linear"] = [](Generator& g) {
    return Case{{r({2, 3, 4}, g), r({5, 4}, g), r({5}, g)}, [](auto& x) { return linear(x[0], x[1], x[2]); }};
  };
}

// The network layers' ops and the losses.
void add_layer_cases(Cases& c) {
  c["softmax"] = [](Generator& g) { return Case{{r({3, 5}, g)}, [](auto& x) { return softmax(x[0]); }}; };
  c["log_softmax"] = [](Generator& g) { return Case{{r({3, 5}, g)}, [](auto& x) { return log_softmax(x[0]); }}; };
  c["layer_norm"] = [](Generator& g) {
    return Case{{r({3, 6}, g), r({6}, g), r({6}, g)}, [](auto& x) { return layer_norm(x[0], x[1], x[2], 1e-5); }};
  };
  c["embedding"] = [](Generator& g) {
    Tensor idx = Tensor::from_vector<int64_t>({0, 3, 3, 1, 4, 0}, {2, 3});
    return Case{{r({5, 4}, g)}, [idx](auto& x) { return embedding(x[0], idx); }};
  };
  c["dropout"] = [](Generator& g) {
    // The mask is drawn from a generator reseeded for every evaluation, so the function
    // is deterministic for the finite differences.
    return Case{{r({20}, g)}, [](auto& x) {
                  Generator mask_gen(7);
                  return dropout(x[0], 0.3, true, &mask_gen);
                }};
  };
  c["mse_loss"] = [](Generator& g) {
    return Case{{r({4, 3}, g), r({4, 3}, g)}, [](auto& x) { return mse_loss(x[0], x[1]); }};
  };
  c["cross_entropy"] = [](Generator& g) {
    Tensor targets = Tensor::from_vector<int64_t>({2, 0, 4}, {3});
    return Case{{r({3, 5}, g)}, [targets](auto& x) { return cross_entropy(x[0], targets); }};
  };
}

Cases cases() {
  Cases c;
  add_pointwise_cases(c);
  add_shape_cases(c);
  add_layer_cases(c);
  return c;
}

}  // namespace

class TestOps : public QObject {
  Q_OBJECT
 private slots:
  void testGradient_data() {
    QTest::addColumn<QString>("op");
    for (auto& [name, _] : cases())
      QTest::newRow(name.c_str()) << QString::fromStdString(name);
  }

  void testGradient() {
    QFETCH(QString, op);
    Generator gen(1234);
    Case c = cases().at(op.toStdString())(gen);
    for (Tensor& t : c.inputs)
      t.set_requires_grad(true);
    const Tensor probe_out = c.fn(c.inputs);
    const Tensor weights = randn(probe_out.sizes(), DType::F64, &gen);
    auto objective = [&]() { return sum(mul(c.fn(c.inputs), weights)); };

    const std::vector<Tensor> analytic = autograd::grad({objective()}, c.inputs);
    constexpr double kEps = 1e-6;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      double* p = c.inputs[i].data<double>();
      for (int64_t j = 0; j < c.inputs[i].numel(); ++j) {
        const double saved = p[j];
        double plus, minus;
        {
          autograd::NoGradGuard no_grad;
          p[j] = saved + kEps;
          plus = objective().item<double>();
          p[j] = saved - kEps;
          minus = objective().item<double>();
          p[j] = saved;
        }
        const double numeric = (plus - minus) / (2 * kEps);
        const double got = analytic[i].to_vector<double>()[j];
        QVERIFY2(std::fabs(numeric - got) <= 1e-6 + 1e-5 * std::fabs(numeric),
                 qPrintable(QString("%1: input %2 element %3: analytic %4, numeric %5")
                                .arg(op)
                                .arg(i)
                                .arg(j)
                                .arg(got, 0, 'g', 12)
                                .arg(numeric, 0, 'g', 12)));
      }
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestOps)
#include "tst_ops.moc"
