#include "graph_task.h"

#include <unordered_set>

#include "accumulate_grad.h"
#include "probe.h"

namespace ddpscope::autograd {
namespace {
thread_local GraphTask* t_current_task = nullptr;

struct CurrentTaskScope {
  GraphTask* previous;
  explicit CurrentTaskScope(GraphTask* task) : previous(t_current_task) { t_current_task = task; }
  ~CurrentTaskScope() { t_current_task = previous; }
};
}  // namespace

GraphTask* GraphTask::current() { return t_current_task; }

void GraphTask::compute_dependencies(Node* root) { compute_dependencies(std::vector<Node*>{root}); }

std::unordered_map<Node*, int> GraphTask::dependencies() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dependencies_;
}

void GraphTask::compute_dependencies(const std::vector<Node*>& starts) {
  std::vector<Node*> stack(starts.begin(), starts.end());
  std::unordered_set<Node*> seen(starts.begin(), starts.end());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->next_edges()) {
      if (!e.is_valid()) continue;
      Node* next = e.function.get();
      ++dependencies_[next];
      if (seen.insert(next).second) stack.push_back(next);
    }
  }
}

void GraphTask::set_targets(Node* root, const edge_list& targets, bool accumulate) {
  for (size_t i = 0; i < targets.size(); ++i) {
    const Edge& t = targets[i];
    DDPSCOPE_CHECK(t.is_valid(), "input ", i, " of grad()/backward(inputs) does not require grad");
    ExecInfo& info = exec_info_[t.function.get()];
    info.needed = true;
    if (!accumulate) {
      info.captures.emplace_back(t.input_nr, i);
      // grad() reads a leaf's gradient without touching .grad.
      if (t.function->kind() == NodeKind::AccumulateGrad) info.run_node = false;
    }
  }
  captured_.resize(accumulate ? 0 : targets.size());
  // Post-order walk: a node is needed when any node after it is.
  struct Frame {
    Node* node;
    size_t next;
  };
  std::unordered_set<Node*> visited{root};
  std::vector<Frame> stack{{root, 0}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    const edge_list& edges = f.node->next_edges();
    if (f.next < edges.size()) {
      Node* child = edges[f.next++].function.get();
      if (child && visited.insert(child).second) stack.push_back({child, 0});
      continue;
    }
    Node* done = f.node;
    stack.pop_back();
    bool needed = false;
    for (const Edge& e : done->next_edges()) {
      if (!e.is_valid()) continue;
      auto it = exec_info_.find(e.function.get());
      if (it != exec_info_.end() && it->second.needed) needed = true;
    }
    if (needed) exec_info_[done].needed = true;
  }
  // Targets no node leads to are simply not reached; their captured gradient stays
  // undefined and grad() reports it.
}

bool GraphTask::should_run(Node* node) const {
  if (exec_info_.empty()) return true;
  auto it = exec_info_.find(node);
  return it != exec_info_.end() && it->second.needed;
}

void GraphTask::deliver(const Edge& edge, Tensor grad) {
  std::lock_guard<std::mutex> lock(mutex_);
  Node* fn = edge.function.get();
  auto dep = dependencies_.find(fn);
  DDPSCOPE_CHECK(dep != dependencies_.end(), "gradient delivered to ", fn->name(),
                 ", which is not part of this backward pass");
  auto [it, inserted] = not_ready_.try_emplace(fn, InputBuffer(fn->num_inputs()));
  it->second.add(edge.input_nr, std::move(grad));
  --dep->second;
  if (record_dependencies_ && probes::enabled()) {
    probes::EventArgs args;
    args.id = probe_ctx_;
    args.id2 = static_cast<int64_t>(fn->sequence_nr());
    args.param = dep->second;
    DDPSCOPE_INSTANT(probes::Kind::Dependency, "dependency", args);
  }
  if (dep->second == 0) {
    ready_.push({edge.function, std::move(it->second)});
    not_ready_.erase(it);
    ready_cv_.notify_one();
  }
}

void GraphTask::push_ready(std::shared_ptr<Node> node, InputBuffer inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  ready_.push({std::move(node), std::move(inputs)});
  ready_cv_.notify_one();
}

void GraphTask::hold() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++holds_;
}

void GraphTask::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  --holds_;
  ready_cv_.notify_one();
}

bool GraphTask::has_callbacks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !callbacks_.empty();
}

void GraphTask::queue_callback(std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(mutex_);
  callbacks_.push_back(std::move(callback));
}

void GraphTask::evaluate(ReadyTask& task) {
  Node* node = task.node.get();
  auto info = exec_info_.empty() ? exec_info_.end() : exec_info_.find(node);
  if (info != exec_info_.end() && !info->second.captures.empty()) {
    variable_list grads = task.inputs.release();
    for (auto [input_nr, index] : info->second.captures) {
      if (input_nr < grads.size()) captured_[index] = grads[input_nr];
    }
    task.inputs = InputBuffer(0);
    for (uint32_t i = 0; i < grads.size(); ++i)
      task.inputs.add(i, grads[i]);
    if (!info->second.run_node) return;
  }
  if (leaf_sink_ && node->kind() == NodeKind::AccumulateGrad) {
    auto& leaf = static_cast<AccumulateGrad&>(*node);
    variable_list grads = task.inputs.release();
    if (!grads.empty() && grads[0].defined()) {
      leaf_sink_(leaf.variable(), leaf.apply_leaf_hooks(std::move(grads[0])));
      leaf.run_post_accumulate_hooks();  // DDP's reducer learns the gradient is ready
    }
    return;
  }
  if (node->kind() != NodeKind::AccumulateGrad) task.inputs.fill_missing_with_zeros(*node);
  // The node's name is built and interned only while probes record.
  DDPSCOPE_SPAN_DYNAMIC(span, probes::Kind::AutogradNode, node->name());
  span.args().id = static_cast<int64_t>(node->sequence_nr());
  span.args().id2 = probe_ctx_;
  variable_list outputs = node->run(task.inputs.release());
  span.end();
  if (!keep_graph_) node->release_variables();
  const edge_list& edges = node->next_edges();
  DDPSCOPE_CHECK(outputs.size() == edges.size() || node->kind() == NodeKind::AccumulateGrad, node->name(), " returned ",
                 outputs.size(), " gradients for ", edges.size(), " inputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Edge& e = edges[i];
    if (!e.is_valid() || !should_run(e.function.get())) continue;
    deliver(e, std::move(outputs[i]));
  }
}

void GraphTask::run() {
  CurrentTaskScope scope(this);
  while (true) {
    ReadyTask task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_cv_.wait(lock, [&] { return !ready_.empty() || holds_ == 0; });
      if (ready_.empty()) break;
      // priority_queue::top is const; the task is moved out before pop.
      task = std::move(const_cast<ReadyTask&>(ready_.top()));
      ready_.pop();
    }
    evaluate(task);
  }
  if (!defer_callbacks_) run_callbacks();
}

void GraphTask::run_callbacks() {
  // Each runs once, even when the task runs again; callbacks may queue more (DDP's
  // finalize does), which this loop then runs too.
  for (;;) {
    std::function<void()> cb;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (callbacks_.empty()) break;
      cb = std::move(callbacks_.front());
      callbacks_.erase(callbacks_.begin());
    }
    cb();
  }
}

}  // namespace ddpscope::autograd
