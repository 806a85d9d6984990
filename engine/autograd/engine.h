// The autograd engine: runs a backward pass over the graph recorded by the forward.
//
//   Tensor w = randn({3}).set_requires_grad();
//   Tensor loss = sum(mul(w, w));
//   loss.backward();                       // w.grad() == 2 * w
//   auto g = autograd::grad({loss2}, {w}); // gradient without touching w.grad()
//
// Nodes run on the calling thread in dependency order; among ready nodes the one created
// last in the forward runs first. See GraphTask for injecting work from other threads.
#pragma once

#include <functional>

#include "graph_task.h"
#include "node.h"

namespace ddpscope::autograd {

// Accumulates gradients of `roots` into the .grad of leaves. `grads` may be empty when
// every root is a scalar. With `inputs`, only those leaves receive gradients.
void backward(const variable_list& roots, const variable_list& grads = {}, bool retain_graph = false,
              const variable_list& inputs = {});

// Returns d(outputs)/d(inputs) without changing any .grad. An input that outputs do not
// depend on is an error unless allow_unused (then its gradient is undefined).
variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs = {},
                   bool retain_graph = false, bool allow_unused = false);

// Queues a callback to run when the current backward pass finishes (DDP's finalize).
// Must be called from inside a backward pass (a hook or a node).
void queue_callback(std::function<void()> callback);

// Lower-level entry used by the two above and by distributed autograd: prepares a
// GraphTask rooted at a GraphRoot for `root_edges` and runs it.
variable_list run_backward(const edge_list& root_edges, const variable_list& root_grads, bool keep_graph,
                           const edge_list& targets, bool accumulate);

}  // namespace ddpscope::autograd
