#include "node.h"

namespace ddpscope::autograd {
namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::Operation: return "operation";
    case NodeKind::AccumulateGrad: return "accumulate_grad";
    case NodeKind::GraphRoot: return "graph_root";
    case NodeKind::Send: return "send";
    case NodeKind::Recv: return "recv";
  }
  return "?";
}

Node::Node() : sequence_nr_(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

uint32_t Node::add_input_metadata(const Tensor& t) {
  input_metadata_.push_back({t.sizes(), t.dtype(), t.device()});
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

void Node::add_tensor_pre_hook(uint32_t input_nr, Tensor::GradHook hook) {
  pre_hooks_.emplace_back(input_nr, std::move(hook));
}

variable_list Node::run(variable_list&& grads) {
  for (auto& [input_nr, hook] : pre_hooks_) {
    if (input_nr < grads.size() && grads[input_nr].defined()) {
      if (auto replaced = hook(grads[input_nr])) grads[input_nr] = std::move(*replaced);
    }
  }
  if (post_hooks_.empty()) return apply(std::move(grads));
  variable_list inputs = grads;  // kept for the post-hooks
  variable_list outputs = apply(std::move(grads));
  for (auto& hook : post_hooks_)
    hook(outputs, inputs);
  return outputs;
}

GraphRoot::GraphRoot(edge_list roots, variable_list grads) : grads_(std::move(grads)) {
  set_next_edges(std::move(roots));
}

}  // namespace ddpscope::autograd
