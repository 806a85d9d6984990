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

 private:
  Tensor variable_;
};

}  // namespace ddpscope::autograd
