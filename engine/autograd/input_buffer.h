// Collects the gradients arriving for one node's inputs, summing those that arrive
// more than once (a tensor used by several ops).
#pragma once

#include "node.h"

namespace ddpscope::autograd {

class InputBuffer {
 public:
  explicit InputBuffer(size_t size = 0) : grads_(size) {}
  void add(uint32_t input_nr, Tensor grad);
  // Fills slots that received nothing with zeros of the expected shape, for nodes that
  // need every gradient (all but AccumulateGrad).
  void fill_missing_with_zeros(const Node& node);
  variable_list release() { return std::move(grads_); }

 private:
  variable_list grads_;
};

}  // namespace ddpscope::autograd
