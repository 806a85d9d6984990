#include "dist_engine.h"

#include <atomic>

#include "autograd/autograd_meta.h"
#include "autograd/engine.h"
#include "autograd/input_buffer.h"
#include "context.h"
#include "dist_autograd.h"
#include "probe.h"
#include "rpc/rpc.h"
#include "send_recv_functions.h"

namespace ddpscope::dist_autograd {
namespace {

thread_local BackwardScope* t_scope = nullptr;
std::atomic<int64_t> g_next_pass{1};
std::atomic<int64_t> g_passes_running{0};
std::atomic<int64_t> g_gradient_messages{0};

ContextContainer& contexts() { return ContextContainer::instance(); }

int32_t self_id() { return rpc::is_initialized() ? rpc::agent().self().id : 0; }

// Counts a running pass on this worker while alive.
struct PassCounter {
  PassCounter() { ++g_passes_running; }
  ~PassCounter() { --g_passes_running; }
};

// Runs `first` and whatever it makes ready in the context's task for `pass` (made here,
// with FAST mode's dependencies, when the pass is new to this worker), then waits for the
// gradient messages those nodes sent.
void run_pass(DistAutogradContext& ctx, int64_t pass, bool retain_graph, std::shared_ptr<autograd::Node> first,
              autograd::InputBuffer inputs, autograd::Node* extra_start) {
  PassCounter counting;
  DDPSCOPE_SPAN(span, probes::Kind::DistBackward, "dist_backward");
  span.args().id = ctx.id();
  std::vector<autograd::Node*> starts;
  if (extra_start) starts.push_back(extra_start);
  // FAST mode: every send function of the context is assumed to get its gradient.
  const auto sends = ctx.send_functions();
  for (const auto& s : sends)
    starts.push_back(s.get());
  bool made = false;
  auto task = ctx.graph_task(pass, retain_graph, starts, &made);
  BackwardScope scope(pass, retain_graph);
  {
    // Nodes never block inside run(): a recv function only sends. So holding this while
    // running cannot deadlock a cycle of workers.
    std::lock_guard<std::mutex> lock(ctx.run_mutex());
    task->push_ready(std::move(first), std::move(inputs));
    task->run();
  }
  scope.wait_all();
}

// A gradient message: [ctx_id, autograd_id, pass, retain_graph, [grads...]].
rpc::Value receive_gradients(const rpc::ValueList& a) {
  DDPSCOPE_CHECK(a.size() == 5, "distributed backward: a gradient message has ", a.size(), " parts, not 5");
  const int64_t ctx_id = a[0].to_int();
  auto ctx = contexts().retrieve(ctx_id);
  auto send = ctx->send_function(a[1].to_int());
  const auto& grads = a[4].list();
  DDPSCOPE_CHECK(grads.size() == send->num_inputs(), "distributed backward: ", grads.size(),
                 " gradients arrived for a send function of ", send->num_inputs(), " tensors");
  autograd::InputBuffer inputs(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].is_tensor()) inputs.add(static_cast<uint32_t>(i), grads[i].tensor());
  }
  run_pass(*ctx, a[2].to_int(), a[3].to_bool(), send, std::move(inputs), nullptr);
  return rpc::Value();
}

// [ctx_id, sender]: forget the context and pass the word on to the workers it reached.
rpc::Value receive_release(const rpc::ValueList& a) {
  const int64_t ctx_id = a.at(0).to_int();
  const auto sender = static_cast<int32_t>(a.at(1).to_int());
  auto ctx = contexts().erase(ctx_id);
  if (!ctx) return rpc::Value();  // released here already (another path got here first)
  const int32_t self = self_id();
  for (int32_t w : ctx->known_workers()) {
    if (w != sender && w != self) rpc::rpc_async(w, kReleaseFunction, {rpc::Value(ctx_id), rpc::Value(int64_t{self})});
  }
  return rpc::Value();
}

// Everything a worker needs to take part: the hooks into RPC and the two functions.
// Registered when this file is linked in, which every program using backward() does.
const bool g_installed = [] {
  install_rpc_hooks();
  rpc::register_function(kGradientsFunction, receive_gradients);
  rpc::register_function(kReleaseFunction, receive_release);
  return true;
}();

}  // namespace

// ---------------------------------------------------------------- BackwardScope

BackwardScope::BackwardScope(int64_t pass, bool retain_graph)
    : pass_(pass), retain_graph_(retain_graph), previous_(t_scope) {
  t_scope = this;
}

BackwardScope::~BackwardScope() { t_scope = previous_; }

BackwardScope* BackwardScope::current() { return t_scope; }

void BackwardScope::add(std::shared_ptr<rpc::ValueFuture> reply) {
  ++g_gradient_messages;
  reply->add_done_callback([](rpc::ValueFuture&) { --g_gradient_messages; });
  std::lock_guard<std::mutex> lock(mutex_);
  replies_.push_back(std::move(reply));
}

void BackwardScope::wait_all() {
  std::vector<std::shared_ptr<rpc::ValueFuture>> replies;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replies.swap(replies_);
  }
  std::exception_ptr first;
  for (auto& r : replies) {
    try {
      r->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

// ---------------------------------------------------------------- RecvFunction

autograd::variable_list RecvFunction::apply(autograd::variable_list&& grads) {
  BackwardScope* scope = BackwardScope::current();
  DDPSCOPE_CHECK(scope != nullptr, "this graph crosses workers (its gradient goes back to worker ", peer_,
                 " over RPC); run dist_autograd::backward(context_id, roots) inside the context "
                 "instead of a local backward()");
  rpc::ValueList values;
  values.reserve(grads.size());
  for (auto& g : grads) {
    if (g.defined()) {
      values.emplace_back(std::move(g));
    } else {
      values.emplace_back();  // none: the send function's worker fills in zeros
    }
  }
  rpc::ValueList message;
  message.reserve(5);
  message.emplace_back(ctx_id_);
  message.emplace_back(autograd_id_);
  message.emplace_back(scope->pass());
  message.emplace_back(scope->retain_graph());
  message.emplace_back(std::move(values));
  scope->add(rpc::rpc_async(peer_, kGradientsFunction, std::move(message)));
  return {};
}

// ---------------------------------------------------------------- the API

ContextGuard::ContextGuard() {
  contexts().set_worker_id(self_id());
  id_ = contexts().open()->id();
}

ContextGuard::~ContextGuard() {
  try {
    release_context(id_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_autograd: releasing context %lld failed: %s\n", static_cast<long long>(id_), e.what());
  }
}

int64_t current_context_id() { return ContextContainer::current_id(); }

void backward(int64_t context_id, const std::vector<Tensor>& roots, bool retain_graph, Mode mode) {
  (void)mode;
  auto ctx = contexts().retrieve(context_id);
  DDPSCOPE_CHECK(!roots.empty(), "dist_autograd::backward: no roots");
  autograd::edge_list edges;
  autograd::variable_list grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& t = roots[i];
    DDPSCOPE_CHECK(t.defined(), "dist_autograd::backward: root ", i, " is an undefined tensor");
    DDPSCOPE_CHECK(t.numel() == 1, "dist_autograd::backward: root ", i, " is ", t.describe(),
                   "; roots must be scalars (sum or mean the loss first)");
    DDPSCOPE_CHECK(t.requires_grad(), "dist_autograd::backward: root ", i, " (", t.describe(),
                   ") does not require grad");
    auto* meta = autograd::meta_of(t);
    DDPSCOPE_CHECK(meta && meta->grad_fn, "dist_autograd::backward: root ", i, " (", t.describe(),
                   ") has no grad_fn: it is a leaf, not the result of a computation");
    edges.push_back(autograd::gradient_edge(t));
    grads.push_back(Tensor::ones(t.sizes(), t.dtype(), t.device()));
  }
  auto root = std::make_shared<autograd::GraphRoot>(std::move(edges), std::move(grads));
  const int64_t pass = (int64_t{self_id()} << 48) | g_next_pass.fetch_add(1);
  autograd::Node* start = root.get();
  run_pass(*ctx, pass, retain_graph, std::move(root), autograd::InputBuffer(0), start);
}

std::vector<std::pair<Tensor, Tensor>> get_gradients(int64_t context_id) {
  return contexts().retrieve(context_id)->gradients();
}

Tensor get_gradient(int64_t context_id, const Tensor& leaf) {
  return contexts().retrieve(context_id)->gradient(leaf);
}

void release_context(int64_t context_id) {
  if (ContextContainer::current_id() == context_id) ContextContainer::set_current_id(-1);
  auto ctx = contexts().erase(context_id);
  DDPSCOPE_CHECK(ctx != nullptr, "no distributed autograd context with id ", context_id);
  if (!rpc::is_initialized()) return;
  const int32_t self = self_id();
  for (int32_t w : ctx->known_workers()) {
    if (w != self) rpc::rpc_async(w, kReleaseFunction, {rpc::Value(context_id), rpc::Value(int64_t{self})});
  }
}

DebugInfo debug_info() {
  return {static_cast<int64_t>(contexts().size()), g_passes_running.load(), g_gradient_messages.load()};
}

}  // namespace ddpscope::dist_autograd
