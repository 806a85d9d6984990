// An edge of the backward graph: the gradient for input `input_nr` of `function`.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace ddpscope::autograd {

class Node;

struct Edge {
  std::shared_ptr<Node> function;  // null: the forward input needed no gradient
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
};

using edge_list = std::vector<Edge>;

}  // namespace ddpscope::autograd
