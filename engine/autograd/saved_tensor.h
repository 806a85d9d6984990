// A tensor a node keeps for its backward. It is stored detached (no history, so an op
// saving its own output makes no reference cycle) together with the storage version at
// save time: an in-place change before backward is reported instead of silently giving
// wrong gradients.
#pragma once

#include <string>

#include "../tensor/tensor.h"

namespace ddpscope::autograd {

class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  // `node` names the node in errors.
  Tensor unpack(const std::string& node) const;
  void reset() {
    data_ = Tensor();
    released_ = true;
  }
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  bool released_ = false;
};

}  // namespace ddpscope::autograd
