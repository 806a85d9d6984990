// Node: one function of the backward graph. apply() receives the gradients of the
// forward op's outputs ("inputs" of the node, one per output) and returns the gradients
// of the forward op's inputs, one per next edge. Nodes are created by differentiable
// ops (autograd/ops) and owned by the tensors they produced and by the nodes after them.
//
// Thread-safety: a node is run by one engine thread at a time; hooks are registered
// before backward starts.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../tensor/tensor.h"
#include "edge.h"

namespace ddpscope::autograd {

using variable_list = std::vector<Tensor>;

// What the graph view colours a node by; later layers add send/recv.
enum class NodeKind { Operation, AccumulateGrad, GraphRoot, Send, Recv };
const char* node_kind_name(NodeKind kind);

// Shape, dtype and device of one gradient the node expects, to build zeros for a
// gradient that never arrives.
struct InputMetadata {
  Shape shape;
  DType dtype = DType::F32;
  Device device;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  virtual NodeKind kind() const { return NodeKind::Operation; }
  virtual variable_list apply(variable_list&& grads) = 0;
  // Frees saved tensors once the backward that used them is done (no retain_graph).
  virtual void release_variables() {}

  // Order of creation in the forward pass; later nodes run first when several are ready.
  uint64_t sequence_nr() const { return sequence_nr_; }

  const edge_list& next_edges() const { return next_edges_; }
  void set_next_edges(edge_list edges) { next_edges_ = std::move(edges); }

  uint32_t num_inputs() const { return static_cast<uint32_t>(input_metadata_.size()); }
  uint32_t add_input_metadata(const Tensor& t);
  const InputMetadata& input_metadata(uint32_t i) const { return input_metadata_.at(i); }

  // Tensor hooks of non-leaf tensors: see (and may replace) the gradient of input i.
  void add_tensor_pre_hook(uint32_t input_nr, Tensor::GradHook hook);
  // Called after apply with (gradients out of apply, gradients into apply).
  using PostHook = std::function<void(const variable_list& outputs, const variable_list& inputs)>;
  void add_post_hook(PostHook hook) { post_hooks_.push_back(std::move(hook)); }

  // What the engine calls: pre-hooks, apply, post-hooks.
  variable_list run(variable_list&& grads);

 private:
  uint64_t sequence_nr_;
  edge_list next_edges_;
  std::vector<InputMetadata> input_metadata_;
  std::vector<std::pair<uint32_t, Tensor::GradHook>> pre_hooks_;
  std::vector<PostHook> post_hooks_;
};

// The node that starts a backward pass: returns the root gradients along its edges.
class GraphRoot : public Node {
 public:
  GraphRoot(edge_list roots, variable_list grads);
  std::string name() const override { return "GraphRoot"; }
  NodeKind kind() const override { return NodeKind::GraphRoot; }
  variable_list apply(variable_list&&) override { return grads_; }

 private:
  variable_list grads_;
};

}  // namespace ddpscope::autograd
