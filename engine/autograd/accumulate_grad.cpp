#include "accumulate_grad.h"

#include <utility>

#include "../tensor/kernels.h"
#include "autograd_meta.h"
#include "graph_task.h"

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

Tensor AccumulateGrad::apply_leaf_hooks(Tensor grad) const {
  AutogradMeta& meta = materialize_meta(variable_);
  for (auto& hook : meta.leaf_hooks) {
    if (auto replaced = hook(grad)) grad = std::move(*replaced);
  }
  return grad;
}

void AccumulateGrad::run_post_accumulate_hooks() const {
  AutogradMeta& meta = materialize_meta(variable_);
  for (auto& hook : meta.post_accumulate_hooks)
    hook(variable_);
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor grad = std::move(grads.at(0));
  if (!grad.defined()) return {};
  AutogradMeta& meta = materialize_meta(variable_);
  grad = apply_leaf_hooks(std::move(grad));
  DDPSCOPE_CHECK(grad.sizes() == variable_.sizes(), "gradient ", grad.describe(), " does not match the shape of ",
                 variable_.name().empty() ? "a leaf" : variable_.name(), " ", variable_.describe());
  Tensor destination;
  {
    std::lock_guard lock(meta.accumulator_mutex);  // as take_gradient_destination
    destination = std::exchange(meta.grad_destination_taken, {});
  }
  if (!meta.grad.defined()) {
    if (grad.is_same_view_as(destination) || can_steal(grad))
      meta.grad = std::move(grad);
    else
      meta.grad = grad.clone();
  } else {
    kernels::add_(meta.grad, grad);
  }
  for (auto& hook : meta.post_accumulate_hooks)
    hook(variable_);
  return {};
}

void offer_gradient_destination(const Tensor& leaf, Tensor destination) {
  AutogradMeta& meta = materialize_meta(leaf);
  std::lock_guard lock(meta.accumulator_mutex);
  meta.grad_destination = std::move(destination);
}

Tensor take_gradient_destination(const Edge& edge, const Shape& shape, DType dtype, Device device) {
  if (!edge.is_valid() || edge.function->kind() != NodeKind::AccumulateGrad) return {};
  // Only where the leaf's AccumulateGrad will take the gradient as .grad: grad() and
  // backward(inputs) hand gradients to the caller, who must not get a view of a bucket.
  const GraphTask* task = GraphTask::current();
  // Nor where gradients go to a distributed autograd context (a leaf sink).
  if (task == nullptr || !task->runs_every_node() || task->has_leaf_sink()) return {};
  AutogradMeta* meta = meta_of(static_cast<const AccumulateGrad&>(*edge.function).variable());
  if (meta == nullptr) return {};
  std::lock_guard lock(meta->accumulator_mutex);
  const Tensor& d = meta->grad_destination;
  if (meta->grad.defined() || !d.defined() || d.sizes() != shape || d.dtype() != dtype || d.device() != device ||
      !d.is_contiguous())
    return {};
  meta->grad_destination_taken = std::exchange(meta->grad_destination, {});
  return meta->grad_destination_taken;
}

}  // namespace ddpscope::autograd
