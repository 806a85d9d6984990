// The autograd state of a tensor: whether it needs a gradient, its .grad, the node that
// produced it, hooks. Tensors without history carry none (null pointer), which keeps
// plain data tensors light.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../tensor/tensor.h"
#include "node.h"

namespace ddpscope::autograd {

using PostAccumulateGradHook = std::function<void(const Tensor& variable)>;

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  // Weak: the accumulator holds the leaf, and the graph holds the accumulator.
  std::weak_ptr<Node> grad_accumulator;
  // Hooks of a leaf: run by its AccumulateGrad (they outlive any one graph).
  std::vector<Tensor::GradHook> leaf_hooks;
  std::vector<PostAccumulateGradHook> post_accumulate_hooks;
  std::string name;
  std::mutex accumulator_mutex;
  // Where the leaf's next gradient may be computed (see offer_gradient_destination),
  // and the destination a backward function took, until AccumulateGrad sees it.
  Tensor grad_destination;
  Tensor grad_destination_taken;
};

// The tensor's meta, created on first use.
AutogradMeta& materialize_meta(const Tensor& t);
inline AutogradMeta* meta_of(const Tensor& t) { return t.defined() ? t.impl()->autograd_meta.get() : nullptr; }

// The gradient edge of a tensor: its grad_fn for a non-leaf, its (created on demand)
// AccumulateGrad for a leaf that requires grad, invalid otherwise.
Edge gradient_edge(const Tensor& t);
std::shared_ptr<Node> grad_accumulator(const Tensor& t);

void register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);

}  // namespace ddpscope::autograd
