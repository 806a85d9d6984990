// Distributed autograd (seed 000): a backward pass across the workers that a forward
// reached through RPC. PyTorch's torch.distributed.autograd, in C++.
//
//   rpc::init_rpc(...);
//   {
//     dist_autograd::ContextGuard context;                  // this thread's context
//     Tensor t3 = rpc::rpc_sync("worker1", add, t1, t2).tensor();
//     Tensor loss = sum(mul(t3, t4));
//     dist_autograd::backward(context.id(), {loss});        // runs on every worker reached
//     Tensor g1 = dist_autograd::get_gradient(context.id(), t1);   // never in t1.grad()
//   }                                                       // released on every worker
//
// Inside a context, every RPC whose tensors require grad records a send function on the
// sender and a recv function on the receiver (send_recv_functions.h); nested calls carry
// the context. backward() runs FAST mode as seed 000 describes it (dist_engine.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace ddpscope::dist_autograd {

// Opens a context and makes it the calling thread's; releases it (here and on every
// worker it reached) when destroyed. A second guard on the same thread is an error.
class ContextGuard {
 public:
  ContextGuard();
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;
  int64_t id() const { return id_; }

 private:
  int64_t id_;
};

// FAST (seed 000): every send function of the context is expected to get a gradient;
// one that never does ends the pass with an error naming it. SMART: first finds which
// send functions lie on a path to the roots and waits only for those
// (docs/dist-autograd.md).
enum class Mode { Fast, Smart };

// Runs the distributed backward pass of `roots` (scalars that require grad and have a
// grad_fn) in context `context_id`; returns when every worker's part has finished.
// Gradients accumulate in the context. `retain_graph` reaches every worker.
void backward(int64_t context_id, const std::vector<Tensor>& roots, bool retain_graph = false, Mode mode = Mode::Fast);

// The gradients accumulated on this worker in the context: (leaf, gradient) pairs.
std::vector<std::pair<Tensor, Tensor>> get_gradients(int64_t context_id);
// The gradient of `leaf` in the context; undefined when it received none.
Tensor get_gradient(int64_t context_id, const Tensor& leaf);

// Releases the context here and on every worker it reached (ContextGuard does this).
void release_context(int64_t context_id);

// The calling thread's context, -1 for none.
int64_t current_context_id();

struct DebugInfo {
  int64_t contexts = 0;           // alive on this worker
  int64_t backward_passes = 0;    // running on this worker
  int64_t gradient_messages = 0;  // gradient messages sent and not yet answered
  int64_t passes_held = 0;        // contexts here holding a pass's graph task
};
DebugInfo debug_info();

// The run file gets each pass's graph on every worker (while probes are on). A training
// job, whose passes repeat one graph, keeps the first `passes` on each worker, and more
// when the app asks for a graph. Negative: no limit (the default, for the examples).
void limit_recorded_graphs(int64_t passes);

}  // namespace ddpscope::dist_autograd
