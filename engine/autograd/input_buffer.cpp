#include "input_buffer.h"

#include "../tensor/kernels.h"

namespace ddpscope::autograd {

void InputBuffer::add(uint32_t input_nr, Tensor grad) {
  if (!grad.defined()) return;
  if (input_nr >= grads_.size()) grads_.resize(input_nr + 1);
  Tensor& slot = grads_[input_nr];
  if (!slot.defined()) {
    slot = std::move(grad);
  } else {
    // Out of place: the first gradient may be shared with another node's buffer.
    slot = kernels::binary(slot, grad, kernels::BinaryOp::Add);
  }
}

void InputBuffer::fill_missing_with_zeros(const Node& node) {
  if (grads_.size() < node.num_inputs()) grads_.resize(node.num_inputs());
  for (uint32_t i = 0; i < node.num_inputs(); ++i) {
    if (!grads_[i].defined()) {
      const InputMetadata& m = node.input_metadata(i);
      grads_[i] = Tensor::zeros(m.shape, m.dtype, m.device);
    }
  }
}

}  // namespace ddpscope::autograd
