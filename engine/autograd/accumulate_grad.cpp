#include "accumulate_grad.h"

#include "../tensor/kernels.h"
#include "autograd_meta.h"

namespace ddpscope::autograd {
namespace {
// A gradient may become .grad without a copy when it is a whole, contiguous buffer that
// nothing else references (the usual case: a fresh kernel output).
bool can_steal(const Tensor& g) {
  return g.impl_ptr().use_count() == 1 && g.storage().use_count() == 1 && g.is_contiguous() &&
         g.storage_offset() == 0 && g.storage()->nbytes() == g.nbytes();
}
}  // namespace

std::string AccumulateGrad::name() const {
  const std::string& n = variable_.name();
  return n.empty() ? "AccumulateGrad" : "AccumulateGrad(" + n + ")";
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor grad = std::move(grads.at(0));
  if (!grad.defined()) return {};
  AutogradMeta& meta = materialize_meta(variable_);
  for (auto& hook : meta.leaf_hooks) {
    if (auto replaced = hook(grad)) grad = std::move(*replaced);
  }
  DDPSCOPE_CHECK(grad.sizes() == variable_.sizes(), "gradient ", grad.describe(),
                 " does not match the shape of ",
                 variable_.name().empty() ? "a leaf" : variable_.name(), " ", variable_.describe());
  if (!meta.grad.defined()) {
    meta.grad = can_steal(grad) ? std::move(grad) : grad.clone();
  } else {
    kernels::add_(meta.grad, grad);
  }
  for (auto& hook : meta.post_accumulate_hooks)
    hook(variable_);
  return {};
}

}  // namespace ddpscope::autograd
