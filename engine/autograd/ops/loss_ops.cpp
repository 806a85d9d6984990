// Losses with mean reduction. cross_entropy fuses log-softmax and NLL: its gradient is
// (softmax - one_hot) / N, computed from the saved log-probabilities.
#include "../../tensor/kernels.h"
#include "../function_helpers.h"
#include "../ops.h"
#include "../saved_tensor.h"

namespace ddpscope {
using namespace autograd;
namespace k = kernels;

namespace {

class MseLossBackward : public Node {
 public:
  MseLossBackward(const Tensor& diff, Shape pred_shape, Shape target_shape)
      : diff_(diff), pred_shape_(std::move(pred_shape)), target_shape_(std::move(target_shape)) {}
  std::string name() const override { return "MseLossBackward"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor d = diff_.unpack(name());
    const double g = grads[0].item<double>();
    // d/dpred mean((pred - target)^2) = 2 (pred - target) / N
    const Tensor gp = k::affine(d, 2.0 * g / static_cast<double>(d.numel()), 0.0);
    Tensor gpred, gtarget;
    if (wants_grad(*this, 0)) gpred = k::sum_to(gp, pred_shape_);
    if (wants_grad(*this, 1)) gtarget = k::sum_to(k::unary(gp, k::UnaryOp::Neg), target_shape_);
    return {gpred, gtarget};
  }
  void release_variables() override { diff_.reset(); }

 private:
  SavedTensor diff_;
  Shape pred_shape_, target_shape_;
};

class CrossEntropyBackward : public Node {
 public:
  CrossEntropyBackward(const Tensor& log_probs, const Tensor& targets, Shape logits_shape)
      : log_probs_(log_probs), targets_(targets), logits_shape_(std::move(logits_shape)) {}
  std::string name() const override { return "CrossEntropyBackward"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor lp = log_probs_.unpack(name());
    const Tensor g_lp = k::nll_loss_backward(grads[0], lp, targets_.unpack(name()));
    return {k::log_softmax_backward(g_lp, lp).view(logits_shape_)};
  }
  void release_variables() override {
    log_probs_.reset();
    targets_.reset();
  }

 private:
  SavedTensor log_probs_, targets_;
  Shape logits_shape_;
};

}  // namespace

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  DDPSCOPE_CHECK(prediction.sizes() == target.sizes(), "mse_loss: prediction ", prediction.describe(), " and target ",
                 target.describe(), " differ in shape");
  const Tensor diff = k::binary(prediction, target, k::BinaryOp::Sub);
  const Tensor sq = k::unary(diff, k::UnaryOp::Square);
  Tensor out = k::sum(sq);
  k::scale_(out, 1.0 / static_cast<double>(std::max<int64_t>(diff.numel(), 1)));
  if (needs_grad({&prediction, &target})) {
    connect(std::make_shared<MseLossBackward>(diff, prediction.sizes(), target.sizes()), {&prediction, &target}, out);
  }
  return out;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  DDPSCOPE_CHECK(logits.dim() >= 2, "cross_entropy: logits must be [N, C], got ", logits.describe());
  const Tensor flat = logits.contiguous().view({-1, logits.size(-1)});
  const Tensor flat_targets = targets.contiguous().view({-1});
  const Tensor lp = k::log_softmax(flat);
  Tensor out = k::nll_loss(lp, flat_targets);
  if (needs_grad({&logits})) {
    connect(std::make_shared<CrossEntropyBackward>(lp, flat_targets, logits.sizes()), {&logits}, out);
  }
  return out;
}

}  // namespace ddpscope
