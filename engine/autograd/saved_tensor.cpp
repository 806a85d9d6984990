#include "saved_tensor.h"

namespace ddpscope::autograd {

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;
  data_ = t.detach();
  version_ = t.storage()->version();
}

Tensor SavedTensor::unpack(const std::string& node) const {
  DDPSCOPE_CHECK(!released_, "trying to run backward through ", node,
                 " a second time, but its saved tensors were freed after the first backward; "
                 "pass retain_graph=true to the first backward if you need a second one");
  if (!data_.defined()) return data_;
  const uint64_t now = data_.storage()->version();
  DDPSCOPE_CHECK(now == version_, "a tensor ", data_.describe(), " saved by ", node,
                 " for backward was modified in place (version ", version_, " -> ", now,
                 "); do the in-place update after backward, or clone the tensor first");
  return data_;
}

}  // namespace ddpscope::autograd
