// What every differentiable op does after computing its result: decide whether to
// record, link the new node to its inputs' gradient edges, and give the output its
// history.
#pragma once

#include <initializer_list>
#include <memory>

#include "autograd_meta.h"
#include "grad_mode.h"
#include "node.h"

namespace ddpscope::autograd {

inline bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

// Sets the node's next edges from `inputs` (in order) and makes `output` its result.
inline void connect(const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> inputs,
                    const Tensor& output) {
  edge_list edges;
  edges.reserve(inputs.size());
  for (const Tensor* t : inputs)
    edges.push_back(t->defined() ? gradient_edge(*t) : Edge{});
  node->set_next_edges(std::move(edges));
  AutogradMeta& meta = materialize_meta(output);
  meta.grad_fn = node;
  meta.output_nr = node->add_input_metadata(output);
}

// Gradient for input i only if that input's edge will use it.
inline bool wants_grad(const Node& node, size_t i) {
  return i < node.next_edges().size() && node.next_edges()[i].is_valid();
}

}  // namespace ddpscope::autograd
