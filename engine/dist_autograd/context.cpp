#include "context.h"

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "probe.h"
#include "pass_graph.h"
#include "send_recv_functions.h"
#include "ddpscope/error.h"

namespace ddpscope::dist_autograd {
namespace {
thread_local int64_t t_current = -1;

void record_context(int64_t id, bool created) {
  probes::EventArgs args;
  args.id = id;
  if (created) {
    DDPSCOPE_INSTANT(probes::Kind::DistContext, "context.create", args);
  } else {
    DDPSCOPE_INSTANT(probes::Kind::DistContext, "context.release", args);
  }
}
}  // namespace

void DistAutogradContext::add_send(int64_t autograd_id, std::shared_ptr<SendFunction> fn, int32_t peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  sends_[autograd_id] = std::move(fn);
  known_workers_.insert(peer);
}

void DistAutogradContext::add_recv(int64_t autograd_id, std::shared_ptr<RecvFunction> fn, int32_t peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  recvs_[autograd_id] = std::move(fn);
  known_workers_.insert(peer);
}

void DistAutogradContext::add_known_worker(int32_t worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  known_workers_.insert(worker);
}

std::shared_ptr<SendFunction> DistAutogradContext::send_function(int64_t autograd_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sends_.find(autograd_id);
  DDPSCOPE_CHECK(it != sends_.end(), "distributed autograd context ", id_,
                 " has no send function with autograd message id ", autograd_id);
  return it->second;
}

std::set<int32_t> DistAutogradContext::known_workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return known_workers_;
}

void DistAutogradContext::accumulate_grad(const Tensor& leaf, const Tensor& grad) {
  autograd::NoGradGuard no_grad;
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = grads_.try_emplace(leaf.impl_ptr().get(), Accumulated{leaf, grad});
  // A new tensor, never in place: the first gradient may be shared with the graph.
  if (!inserted) it->second.grad = add(it->second.grad, grad);
}

std::vector<std::pair<Tensor, Tensor>> DistAutogradContext::gradients() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<Tensor, Tensor>> out;
  for (const auto& [key, a] : grads_)
    out.emplace_back(a.leaf, a.grad);
  return out;
}

Tensor DistAutogradContext::gradient(const Tensor& leaf) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = grads_.find(leaf.impl_ptr().get());
  return it == grads_.end() ? Tensor() : it->second.grad;
}

bool DistAutogradContext::abandon(int64_t pass) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!abandoned_.insert(pass).second) return false;  // told already
  if (pass_ != pass) return false;
  task_.reset();
  active_.clear();
  searched_.clear();
  sends_run_.clear();
  return true;
}

bool DistAutogradContext::holds_pass() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return task_ != nullptr;
}

void DistAutogradContext::reset_pass_locked(int64_t pass) {
  DDPSCOPE_CHECK(!abandoned_.count(pass), "distributed backward pass ", pass, " of context ", id_,
                 " was abandoned after an error on another worker");
  if (pass_ == pass) return;
  pass_ = pass;
  task_.reset();
  smart_ = false;
  active_.clear();
  searched_.clear();
  sends_run_.clear();
}

void DistAutogradContext::set_gradient(const Tensor& leaf, Tensor grad) {
  std::lock_guard<std::mutex> lock(mutex_);
  grads_[leaf.impl_ptr().get()] = Accumulated{leaf, std::move(grad)};
}

std::shared_ptr<autograd::GraphTask> DistAutogradContext::graph_task(int64_t pass, bool retain_graph,
                                                                     autograd::Node* extra_start, bool* made) {
  std::lock_guard<std::mutex> lock(mutex_);
  reset_pass_locked(pass);
  *made = false;
  if (task_) return task_;
  std::vector<autograd::Node*> starts;
  if (extra_start) starts.push_back(extra_start);
  for (const auto& [id, fn] : sends_) {
    if (!smart_ || active_.count(id)) starts.push_back(fn.get());
  }
  task_ = std::make_shared<autograd::GraphTask>(retain_graph);
  // The task belongs to this context, so `this` outlives it.
  task_->set_leaf_sink([this](const Tensor& leaf, Tensor grad) { accumulate_grad(leaf, grad); });
  task_->set_defer_callbacks(true);
  task_->compute_dependencies(starts);
  // A recorded graph gets its dependency decrements too: the two replay the pass.
  task_->set_probe_context(id_, record_pass_graph(id_, pass, starts, task_->dependencies()));
  *made = true;
  return task_;
}

std::vector<std::shared_ptr<SendFunction>> DistAutogradContext::activate(int64_t pass,
                                                                         const std::vector<int64_t>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  reset_pass_locked(pass);
  DDPSCOPE_CHECK(!task_, "SMART mode: send functions of context ", id_, " were activated after pass ", pass,
                 " began running here");
  smart_ = true;
  std::vector<std::shared_ptr<SendFunction>> fresh;
  for (int64_t id : ids) {
    auto it = sends_.find(id);
    DDPSCOPE_CHECK(it != sends_.end(), "distributed autograd context ", id_,
                   " has no send function with autograd message id ", id);
    if (active_.insert(id).second) fresh.push_back(it->second);
  }
  return fresh;
}

bool DistAutogradContext::first_search(int64_t pass, autograd::Node* node) {
  std::lock_guard<std::mutex> lock(mutex_);
  reset_pass_locked(pass);
  return searched_.insert(node).second;
}

void DistAutogradContext::mark_send_run(int64_t pass, int64_t autograd_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  reset_pass_locked(pass);
  sends_run_.insert(autograd_id);
}

DistAutogradContext::SendReport DistAutogradContext::send_report(int64_t pass) const {
  std::lock_guard<std::mutex> lock(mutex_);
  SendReport r;
  if (pass_ != pass) return r;  // the pass never reached this worker
  r.ran = sends_run_;
  for (const auto& [id, fn] : sends_) {
    if (!sends_run_.count(id) && (!smart_ || active_.count(id))) r.not_run[id] = fn;
  }
  return r;
}

// ---------------------------------------------------------------- the container

ContextContainer& ContextContainer::instance() {
  static ContextContainer* c = new ContextContainer();  // leaked: RPC threads may outlive main
  return *c;
}

void ContextContainer::set_worker_id(int32_t worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  worker_id_ = worker;
}

std::shared_ptr<DistAutogradContext> ContextContainer::open() {
  DDPSCOPE_CHECK(t_current < 0, "a distributed autograd context (id ", t_current,
                 ") is already open on this thread; release it before opening another");
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t id = (int64_t{worker_id_} << 48) | next_++;
  auto ctx = std::make_shared<DistAutogradContext>(id);
  contexts_[id] = ctx;
  t_current = id;
  record_context(id, true);
  return ctx;
}

std::shared_ptr<DistAutogradContext> ContextContainer::retrieve(int64_t id) const {
  auto ctx = find(id);
  DDPSCOPE_CHECK(ctx != nullptr, "no distributed autograd context with id ", id);
  return ctx;
}

std::shared_ptr<DistAutogradContext> ContextContainer::find(int64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = contexts_.find(id);
  return it == contexts_.end() ? nullptr : it->second;
}

void ContextContainer::remember_released_locked(int64_t id) {
  constexpr size_t kRemembered = 65536;
  if (!released_.insert(id).second) return;
  released_order_.push_back(id);
  if (released_order_.size() > kRemembered) {
    released_.erase(released_order_.front());
    released_order_.pop_front();
  }
}

std::shared_ptr<DistAutogradContext> ContextContainer::get_or_create(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (released_.count(id)) return std::make_shared<DistAutogradContext>(id);
  auto& slot = contexts_[id];
  if (!slot) {
    slot = std::make_shared<DistAutogradContext>(id);
    record_context(id, true);
  }
  return slot;
}

std::shared_ptr<DistAutogradContext> ContextContainer::erase(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = contexts_.find(id);
  if (it == contexts_.end()) return nullptr;
  auto ctx = std::move(it->second);
  contexts_.erase(it);
  remember_released_locked(id);
  record_context(id, false);
  return ctx;
}

size_t ContextContainer::erase_started_by(int32_t origin) {
  std::vector<std::shared_ptr<DistAutogradContext>> gone;  // freed after the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = contexts_.begin(); it != contexts_.end();) {
      if ((it->first >> 48) == origin) {
        gone.push_back(std::move(it->second));
        remember_released_locked(it->first);
        record_context(it->first, false);
        it = contexts_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return gone.size();
}

size_t ContextContainer::passes_held() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& [id, ctx] : contexts_)
    n += ctx->holds_pass();
  return n;
}

size_t ContextContainer::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return contexts_.size();
}

int64_t ContextContainer::current_id() { return t_current; }
void ContextContainer::set_current_id(int64_t id) { t_current = id; }

}  // namespace ddpscope::dist_autograd
