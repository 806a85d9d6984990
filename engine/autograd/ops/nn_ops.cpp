// Softmax family, layer norm, embedding and dropout with their gradients.
#include "../../tensor/kernels.h"
#include "../function_helpers.h"
#include "../ops.h"
#include "../saved_tensor.h"

namespace ddpscope {
using namespace autograd;
namespace k = kernels;

namespace {

class SoftmaxBackward : public Node {
 public:
  SoftmaxBackward(const Tensor& output, bool log) : output_(output), log_(log) {}
  std::string name() const override { return log_ ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor y = output_.unpack(name());
    return {log_ ? k::log_softmax_backward(grads[0], y) : k::softmax_backward(grads[0], y)};
  }
  void release_variables() override { output_.reset(); }

 private:
  SavedTensor output_;
  bool log_;
};

class LayerNormBackward : public Node {
 public:
  LayerNormBackward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd)
      : x_(x), weight_(weight), mean_(mean), rstd_(rstd) {}
  std::string name() const override { return "LayerNormBackward"; }
  variable_list apply(variable_list&& grads) override {
    k::LayerNormGrads g = k::layer_norm_backward(grads[0], x_.unpack(name()), weight_.unpack(name()),
                                                 mean_.unpack(name()), rstd_.unpack(name()));
    return {g.input, g.weight, g.bias};
  }
  void release_variables() override {
    x_.reset();
    weight_.reset();
    mean_.reset();
    rstd_.reset();
  }

 private:
  SavedTensor x_, weight_, mean_, rstd_;
};

class EmbeddingBackward : public Node {
 public:
  EmbeddingBackward(const Tensor& indices, int64_t num_weights) : indices_(indices), num_weights_(num_weights) {}
  std::string name() const override { return "EmbeddingBackward"; }
  variable_list apply(variable_list&& grads) override {
    return {k::embedding_backward(grads[0], indices_.unpack(name()), num_weights_)};
  }
  void release_variables() override { indices_.reset(); }

 private:
  SavedTensor indices_;
  int64_t num_weights_;
};

class DropoutBackward : public Node {
 public:
  explicit DropoutBackward(const Tensor& scaled_mask) : mask_(scaled_mask) {}
  std::string name() const override { return "DropoutBackward"; }
  variable_list apply(variable_list&& grads) override {
    return {k::binary(grads[0], mask_.unpack(name()), k::BinaryOp::Mul)};
  }
  void release_variables() override { mask_.reset(); }

 private:
  SavedTensor mask_;
};

Tensor softmax_impl(const Tensor& x, bool log) {
  Tensor out = log ? k::log_softmax(x) : k::softmax(x);
  if (needs_grad({&x})) connect(std::make_shared<SoftmaxBackward>(out, log), {&x}, out);
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x) { return softmax_impl(x, false); }
Tensor log_softmax(const Tensor& x) { return softmax_impl(x, true); }

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  DDPSCOPE_CHECK(weight.defined() == bias.defined(), "layer_norm: pass both weight and bias, or neither");
  k::LayerNormResult r = k::layer_norm(x, weight, bias, eps);
  if (needs_grad({&x, &weight, &bias})) {
    connect(std::make_shared<LayerNormBackward>(x, weight, r.mean, r.rstd), {&x, &weight, &bias}, r.output);
  }
  return r.output;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  Tensor out = k::embedding(weight, indices);
  if (needs_grad({&weight})) {
    connect(std::make_shared<EmbeddingBackward>(indices, weight.size(0)), {&weight}, out);
  }
  return out;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  DDPSCOPE_CHECK(p >= 0.0 && p < 1.0, "dropout: probability ", p, " must be in [0, 1)");
  if (!training || p == 0.0) return x;
  Tensor mask = bernoulli(x.sizes(), 1.0 - p, x.dtype(), gen);
  if (!x.device().is_cpu()) mask = mask.to(x.device());
  k::scale_(mask, 1.0 / (1.0 - p));
  Tensor out = k::binary(x, mask, k::BinaryOp::Mul);
  if (needs_grad({&x})) connect(std::make_shared<DropoutBackward>(mask), {&x}, out);
  return out;
}

}  // namespace ddpscope
