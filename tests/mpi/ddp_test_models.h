// Models and tasks the DDP tests share: an MLP and a small transformer task with batches
// drawn alike on every rank, and small modules that make the reducer's cases happen
// (an unused branch, mixed dtypes, a switchable branch, a crossed ready order).
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <QString>
#include "autograd/ops.h"
#include "nn/models.h"

namespace ddpscope::testing {

struct Task {
  std::function<std::shared_ptr<nn::Module>()> build;
  std::function<std::pair<Tensor, Tensor>(Generator&, int64_t)> batch;  // global batch
  std::function<Tensor(const Tensor&, const Tensor&)> loss;
};

// "mlp", or else a two-layer character transformer.
inline Task task(const QString& name) {
  if (name == "mlp") {
    return {[] {
              Generator g(11);
              return std::make_shared<nn::Mlp>(
                  nn::MlpConfig{.in_features = 16, .width = 64, .depth = 4, .out_features = 3}, &g);
            },
            [](Generator& g, int64_t n) {
              return std::make_pair(randn({n, 16}, DType::F32, &g), randn({n, 3}, DType::F32, &g));
            },
            [](const Tensor& out, const Tensor& y) { return mse_loss(out, y); }};
  }
  return {[] {
            Generator g(12);
            return std::make_shared<nn::CharTransformer>(
                nn::TransformerConfig{.vocab_size = 17, .context = 8, .d_model = 16, .heads = 2, .layers = 2}, &g);
          },
          [](Generator& g, int64_t n) {
            return std::make_pair(randint({n, 8}, 17, &g), randint({n, 8}, 17, &g));
          },
          [](const Tensor& out, const Tensor& y) {
            return cross_entropy(reshape(out, {-1, out.size(-1)}), reshape(y, {-1}));
          }};
}

// Rows [rank * b, (rank + 1) * b) of a global batch.
inline Tensor slice(const Tensor& t, int rank, int64_t b) { return t.narrow(0, rank * b, b).contiguous(); }

class TwoBranch : public nn::Module {
 public:
  TwoBranch() {
    Generator g(3);
    used_ = register_module("used", std::make_shared<nn::Linear>(4, 2, true, &g));
    unused_ = register_module("unused", std::make_shared<nn::Linear>(4, 2, true, &g));
  }
  std::string type_name() const override { return "TwoBranch"; }
  Tensor forward(const Tensor& x) override { return used_->forward(x); }

 private:
  std::shared_ptr<nn::Linear> used_, unused_;
};

// A Linear in f32 and a per-output scale stored in f16, computed in f32: DDP gets
// buckets of two dtypes.
class MixedPrecision : public nn::Module {
 public:
  MixedPrecision() {
    Generator g(9);
    fc_ = register_module("fc", std::make_shared<nn::Linear>(8, 4, true, &g));
    scale_ = register_parameter("scale", uniform({4}, 0.5, 1.5, DType::F32, &g).to(DType::F16));
  }
  std::string type_name() const override { return "MixedPrecision"; }
  Tensor forward(const Tensor& x) override { return mul(fc_->forward(x), cast(scale_, DType::F32)); }

 private:
  std::shared_ptr<nn::Linear> fc_;
  Tensor scale_;
};

// A second branch that forward uses only when asked.
class Switch : public nn::Module {
 public:
  Switch() {
    Generator g(5);
    first_ = register_module("first", std::make_shared<nn::Linear>(4, 2, true, &g));
    second_ = register_module("second", std::make_shared<nn::Linear>(4, 2, true, &g));
  }
  std::string type_name() const override { return "Switch"; }
  Tensor forward(const Tensor& x) override {
    return use_second ? add(first_->forward(x), second_->forward(x)) : first_->forward(x);
  }
  bool use_second = false;

 private:
  std::shared_ptr<nn::Linear> first_, second_;
};

// Registers a then b, but applies b first: a's gradients are ready first in backward,
// the opposite of reverse registration order.
class Crossed : public nn::Module {
 public:
  Crossed() {
    Generator g(4);
    a_ = register_module("a", std::make_shared<nn::Linear>(8, 8, true, &g));
    b_ = register_module("b", std::make_shared<nn::Linear>(8, 8, true, &g));
  }
  std::string type_name() const override { return "Crossed"; }
  Tensor forward(const Tensor& x) override { return a_->forward(tanh(b_->forward(x))); }

 private:
  std::shared_ptr<nn::Linear> a_, b_;
};

}  // namespace ddpscope::testing
