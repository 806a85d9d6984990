// AccumulateGrad: the sink of a leaf tensor's gradient. It runs the leaf's tensor hooks,
// adds the gradient into .grad (stealing the buffer when nobody else holds it), then
// runs the post-accumulate-grad hooks, which is where DDP's reducer learns that a
// parameter's gradient is ready.
#pragma once

#include "node.h"

namespace ddpscope::autograd {

class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {}
  std::string name() const override;
  NodeKind kind() const override { return NodeKind::AccumulateGrad; }
  variable_list apply(variable_list&& grads) override;
  const Tensor& variable() const { return variable_; }
  // The leaf's tensor hooks applied to `grad` (apply() runs them before accumulating;
  // distributed autograd runs them before accumulating into its context).
  Tensor apply_leaf_hooks(Tensor grad) const;
  // The post-accumulate-grad hooks (DDP's reducer), for a sink other than .grad.
  void run_post_accumulate_hooks() const;

 private:
  Tensor variable_;
};

// Gradient destinations. DDP's reducer offers each parameter a view into its bucket;
// a backward function that would compute the parameter's gradient into fresh memory may
// write it there instead, which saves copying it into the bucket afterwards. A
// destination is taken only while the leaf's .grad is empty, and once: a second
// gradient for the same leaf in one backward goes to fresh memory. .grad then becomes
// the destination itself, so the offerer must give .grad its own memory before it
// writes to the destination again.
void offer_gradient_destination(const Tensor& leaf, Tensor destination);  // {}: withdraw
// The destination for the gradient flowing along `edge`, or an undefined tensor when
// there is none of this shape, dtype and device, or when the running backward is a
// grad() or backward(inputs), whose gradients go to the caller.
Tensor take_gradient_destination(const Edge& edge, const Shape& shape, DType dtype, Device device);

}  // namespace ddpscope::autograd
