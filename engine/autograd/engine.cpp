#include "engine.h"

#include "autograd_meta.h"

namespace ddpscope::autograd {
namespace {

struct Roots {
  edge_list edges;
  variable_list grads;
};

Roots make_roots(const variable_list& roots, const variable_list& grads, const char* op) {
  DDPSCOPE_CHECK(!roots.empty(), op, ": no tensors to differentiate");
  DDPSCOPE_CHECK(grads.empty() || grads.size() == roots.size(), op, ": ", roots.size(), " outputs but ", grads.size(),
                 " gradients");
  Roots r;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& t = roots[i];
    DDPSCOPE_CHECK(t.defined(), op, ": output ", i, " is an undefined tensor");
    Edge e = gradient_edge(t);
    DDPSCOPE_CHECK(e.is_valid(), op, ": output ", i, " (", t.describe(),
                   ") does not require grad and has no grad_fn; make a parameter it depends "
                   "on require grad, and do not compute it under NoGradGuard");
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      DDPSCOPE_CHECK(t.numel() == 1, op, ": output ", i, " is ", t.describe(),
                     "; a gradient can be created implicitly only for a scalar, so pass one");
      g = Tensor::ones(t.sizes(), t.dtype(), t.device());
    } else {
      DDPSCOPE_CHECK(g.sizes() == t.sizes(), op, ": gradient ", g.describe(), " does not match output ", i, " ",
                     t.describe());
    }
    r.edges.push_back(std::move(e));
    r.grads.push_back(std::move(g));
  }
  return r;
}

edge_list edges_of(const variable_list& inputs, const char* op) {
  edge_list out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    DDPSCOPE_CHECK(e.is_valid(), op, ": input ", i, " (", inputs[i].describe(), ") does not require grad");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

variable_list run_backward(const edge_list& root_edges, const variable_list& root_grads, bool keep_graph,
                           const edge_list& targets, bool accumulate) {
  auto root = std::make_shared<GraphRoot>(root_edges, root_grads);
  GraphTask task(keep_graph);
  task.compute_dependencies(root.get());
  if (!targets.empty()) task.set_targets(root.get(), targets, accumulate);
  task.push_ready(root, InputBuffer(0));
  task.run();
  return task.captured();
}

void backward(const variable_list& roots, const variable_list& grads, bool retain_graph, const variable_list& inputs) {
  Roots r = make_roots(roots, grads, "backward");
  edge_list targets = inputs.empty() ? edge_list{} : edges_of(inputs, "backward");
  run_backward(r.edges, r.grads, retain_graph, targets, /*accumulate=*/true);
}

variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs,
                   bool retain_graph, bool allow_unused) {
  DDPSCOPE_CHECK(!inputs.empty(), "grad: no inputs to differentiate with respect to");
  Roots r = make_roots(outputs, grad_outputs, "grad");
  variable_list result = run_backward(r.edges, r.grads, retain_graph, edges_of(inputs, "grad"), /*accumulate=*/false);
  for (size_t i = 0; i < result.size(); ++i) {
    DDPSCOPE_CHECK(allow_unused || result[i].defined(), "grad: input ", i, " (", inputs[i].describe(),
                   ") is not used by the outputs; pass allow_unused=true "
                   "if that is expected");
  }
  return result;
}

void queue_callback(std::function<void()> callback) {
  GraphTask* task = GraphTask::current();
  DDPSCOPE_CHECK(task != nullptr,
                 "queue_callback: called outside a backward pass; call it "
                 "from a hook that runs during backward");
  task->queue_callback(std::move(callback));
}

}  // namespace ddpscope::autograd
