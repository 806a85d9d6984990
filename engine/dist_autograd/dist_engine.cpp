#include "dist_engine.h"
#include "ddpscope/log.h"

#include <atomic>

#include "autograd/autograd_meta.h"
#include "autograd/engine.h"
#include "autograd/input_buffer.h"
#include "context.h"
#include "dist_autograd.h"
#include "messages.h"
#include "probe.h"
#include "records.h"
#include "rpc/autograd_hooks.h"
#include "rpc/rpc.h"
#include "rpc/wire_format.h"
#include "send_recv_functions.h"
#include "smart_mode.h"

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

// The debug counters as run-file metrics, once a share of a pass has run its nodes and
// sent its gradients (iteration: the pass's counter, the same on every worker).
void record_debug_counters(int64_t pass) {
  if (!probes::enabled()) return;
  const DebugInfo d = debug_info();
  const int64_t step = pass & ((int64_t{1} << 48) - 1);
  probes::record_metric(step, "dist.contexts", static_cast<double>(d.contexts));
  probes::record_metric(step, "dist.backward_passes", static_cast<double>(d.backward_passes));
  probes::record_metric(step, "dist.gradient_messages", static_cast<double>(d.gradient_messages));
}

// "SendRpcBackward on worker1 (the reply to message (0, 5); its recv on worker0)".
std::string describe(const SendFunction& s) {
  constexpr int64_t kReplyBit = rpc::kReplyAutogradBit;
  const bool reply = (s.autograd_id() & kReplyBit) != 0;
  return detail::concat("SendRpcBackward on worker", self_id(), " (", reply ? "the reply to " : "", "message ",
                        rpc::wire::format_id(s.autograd_id() & ~kReplyBit), "; its recv on worker", s.peer(), ")");
}

// This worker's report of `pass`, merged with what the replies brought.
PassReport own_report(const DistAutogradContext& ctx, int64_t pass) {
  PassReport r;
  const auto sends = ctx.send_report(pass);
  r.ran = sends.ran;
  for (const auto& [id, fn] : sends.not_run)
    r.not_run[id] = describe(*fn);
  return r;
}

// Runs `first` and whatever it makes ready in the context's task for `pass` (made here
// when the pass is new to this worker), then waits for the gradient messages those
// nodes sent. `send_id`: the send function `first` is, or -1 for the roots.
// The part of a share that runs at once: `first` and whatever it makes ready, in the
// context's task for `pass` (made here when the pass is new to this worker). Returns the
// scope holding the gradient messages those nodes sent. `send_id`: the send function
// `first` is, or -1 for the roots.
struct Share {
  std::shared_ptr<autograd::GraphTask> task;
  std::shared_ptr<BackwardScope> scope;
};
Share start_share(DistAutogradContext& ctx, int64_t pass, bool retain_graph, std::shared_ptr<autograd::Node> first,
                  autograd::InputBuffer inputs, autograd::Node* extra_start, int64_t send_id) {
  PassCounter counting;
  DDPSCOPE_SPAN(span, probes::Kind::DistBackward, "dist_backward");
  span.args().id = ctx.id();
  span.args().id2 = pass;
  // Gradient messages sent from here carry the context, so the run file files them under it.
  ContextContainer::ScopedCurrent current(ctx.id());
  bool made = false;
  Share share;
  share.task = ctx.graph_task(pass, retain_graph, extra_start, &made);
  if (send_id >= 0) ctx.mark_send_run(pass, send_id);
  share.scope = std::make_shared<BackwardScope>(pass, retain_graph);
  {
    // Nodes never block inside run(): a recv function only sends. So holding this while
    // running cannot deadlock a cycle of workers.
    std::lock_guard<std::mutex> lock(ctx.run_mutex());
    share.task->push_ready(std::move(first), std::move(inputs));
    share.task->run();
  }
  share.scope->leave();
  record_debug_counters(pass);  // while this share still counts as running
  return share;
}

// The end of a share, once its gradient messages are answered: the callbacks its nodes
// queued (DDP's finalize), and this worker's report merged into theirs.
PassReport finish_share(DistAutogradContext& ctx, int64_t pass, const Share& share, PassReport replies) {
  share.task->run_callbacks();
  replies.merge(own_report(ctx, pass));
  return replies;
}

PassReport run_pass(DistAutogradContext& ctx, int64_t pass, bool retain_graph, std::shared_ptr<autograd::Node> first,
                    autograd::InputBuffer inputs, autograd::Node* extra_start, int64_t send_id) {
  Share share = start_share(ctx, pass, retain_graph, std::move(first), std::move(inputs), extra_start, send_id);
  return finish_share(ctx, pass, share, share.scope->wait_all());
}

// A gradient message (messages.h). Answered when the gradient messages it caused are
// answered, without holding a thread meanwhile: a small one runs on the RPC receive
// thread, which saves a hand-off per message.
std::shared_ptr<rpc::ValueFuture> receive_gradients(const rpc::ValueList& a) {
  GradientsMessage m = GradientsMessage::decode(a);
  auto ctx = contexts().retrieve(m.ctx_id);
  const int64_t send_id = m.send_id;
  auto send = ctx->send_function(send_id);
  DDPSCOPE_CHECK(m.grads.size() == send->num_inputs(), "distributed backward: ", m.grads.size(),
                 " gradients arrived for a send function of ", send->num_inputs(), " tensors");
  autograd::InputBuffer inputs(m.grads.size());
  for (size_t i = 0; i < m.grads.size(); ++i) {
    if (m.grads[i].defined()) inputs.add(static_cast<uint32_t>(i), std::move(m.grads[i]));
  }
  const int64_t pass = m.pass;
  Share share = start_share(*ctx, pass, m.retain_graph, send, std::move(inputs), nullptr, send_id);
  auto done = std::make_shared<rpc::ValueFuture>();
  share.scope->when_answered([ctx, pass, share, done](std::exception_ptr error, PassReport replies) {
    if (error) {
      done->set_error(error);
      return;
    }
    auto finish = [ctx, pass, share, done, replies = std::move(replies)]() mutable {
      try {
        done->mark_completed(finish_share(*ctx, pass, share, std::move(replies)).to_value());
      } catch (...) {
        done->set_error(std::current_exception());
      }
    };
    // Queued callbacks (DDP's finalize) may wait for collectives: not on the thread that
    // receives messages. Without them the share ends here, saving a hand-off.
    if (share.task->has_callbacks()) {
      rpc::agent().pool().submit(std::move(finish));
    } else {
      finish();
    }
  });
  return done;
}

// Tells the workers `ctx` reached (but `except`) to drop `pass` (an error ended it).
void spread_abandon(const DistAutogradContext& ctx, int64_t pass, int32_t except) {
  // Not sent "in" the context: the word may arrive after a worker released it.
  ContextContainer::ScopedCurrent outside(-1);
  const int32_t self = self_id();
  for (int32_t w : ctx.known_workers()) {
    if (w == except || w == self) continue;
    // Best effort: a worker whose connection broke has nothing left to drop, and an error
    // here would hide the one that ended the pass (often that same broken connection).
    try {
      rpc::rpc_async(w, kAbandonFunction, AbandonMessage{ctx.id(), pass, self}.encode());
    } catch (const std::exception&) {
    }
  }
}

// Beyond PyTorch (#27643), a failed pass is dropped on every worker it reached, and
// passed on from each worker the first time it hears.
rpc::Value receive_abandon(const rpc::ValueList& a) {
  const AbandonMessage m = AbandonMessage::decode(a);
  auto ctx = contexts().find(m.ctx_id);
  if (!ctx) return rpc::Value();
  ctx->abandon(m.pass);
  spread_abandon(*ctx, m.pass, m.sender);
  return rpc::Value();
}

// Forget the context and pass the word on to the workers it reached.
rpc::Value receive_release(const rpc::ValueList& a) {
  const ReleaseMessage m = ReleaseMessage::decode(a);
  auto ctx = contexts().erase(m.ctx_id);
  if (!ctx) return rpc::Value();  // released here already (another path got here first)
  const int32_t self = self_id();
  for (int32_t w : ctx->known_workers()) {
    if (w != m.sender && w != self) rpc::rpc_async(w, kReleaseFunction, ReleaseMessage{m.ctx_id, self}.encode());
  }
  return rpc::Value();
}

// Everything a worker needs to take part: the hooks into RPC and the two functions.
// Registered when this file is linked in, which every program using backward() does.
const bool g_installed = [] {
  install_rpc_hooks();
  rpc::register_async_function(kGradientsFunction, receive_gradients, {.quick = true});
  rpc::register_function(kReleaseFunction, receive_release);
  rpc::register_function(kActivateFunction, receive_activation);
  rpc::register_function(kAbandonFunction, receive_abandon);
  return true;
}();

}  // namespace

// ---------------------------------------------------------------- BackwardScope

BackwardScope::BackwardScope(int64_t pass, bool retain_graph)
    : pass_(pass), retain_graph_(retain_graph), previous_(t_scope) {
  t_scope = this;
}

BackwardScope::~BackwardScope() { leave(); }

void BackwardScope::leave() {
  if (t_scope == this) t_scope = previous_;
}

void BackwardScope::when_answered(std::function<void(std::exception_ptr, PassReport)> then) {
  std::vector<std::shared_ptr<rpc::ValueFuture>> replies;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replies.swap(replies_);
  }
  // Counts the replies down; the last one to arrive calls `then` on its thread.
  struct Gather {
    std::mutex mutex;
    size_t left;
    std::exception_ptr error;
    PassReport report;
    std::function<void(std::exception_ptr, PassReport)> then;
  };
  auto g = std::make_shared<Gather>();
  g->left = replies.size();
  g->then = std::move(then);
  if (replies.empty()) {
    g->then(nullptr, PassReport());
    return;
  }
  for (auto& r : replies) {
    // On the thread that completes the reply (the RPC receive thread): `then` must not
    // block (receive_gradients hands blocking work to the pool).
    r->add_inline_callback([g](rpc::ValueFuture& f) {
      bool last;
      {
        std::lock_guard<std::mutex> lock(g->mutex);
        if (auto e = f.error()) {
          if (!g->error) g->error = e;
        } else {
          try {
            g->report.merge(PassReport::from_value(f.value()));
          } catch (...) {
            if (!g->error) g->error = std::current_exception();
          }
        }
        last = --g->left == 0;
      }
      if (last) g->then(g->error, std::move(g->report));
    });
  }
}

BackwardScope* BackwardScope::current() { return t_scope; }

void BackwardScope::add(std::shared_ptr<rpc::ValueFuture> reply) {
  ++g_gradient_messages;
  reply->add_inline_callback([](rpc::ValueFuture&) { --g_gradient_messages; });
  std::lock_guard<std::mutex> lock(mutex_);
  replies_.push_back(std::move(reply));
}

PassReport BackwardScope::wait_all() {
  std::vector<std::shared_ptr<rpc::ValueFuture>> replies;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replies.swap(replies_);
  }
  std::exception_ptr first;
  PassReport report;
  for (auto& r : replies) {
    try {
      report.merge(PassReport::from_value(r->wait()));
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  return report;
}

// ---------------------------------------------------------------- RecvFunction

autograd::variable_list RecvFunction::apply(autograd::variable_list&& grads) {
  BackwardScope* scope = BackwardScope::current();
  DDPSCOPE_CHECK(scope != nullptr, "this graph crosses workers (its gradient goes back to worker ", peer_,
                 " over RPC); run dist_autograd::backward(context_id, roots) inside the context "
                 "instead of a local backward()");
  // An undefined gradient goes as none: the send function's worker fills in zeros.
  GradientsMessage m{ctx_id_, autograd_id_, scope->pass(), scope->retain_graph(), std::move(grads)};
  scope->add(rpc::rpc_async(peer_, kGradientsFunction, std::move(m).encode()));
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
    log::warn("dist_autograd: releasing context {} failed: {}", id_, e.what());
  }
}

int64_t current_context_id() { return ContextContainer::current_id(); }

void backward(int64_t context_id, const std::vector<Tensor>& roots, bool retain_graph, Mode mode) {
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
  PassReport report;
  try {
    if (mode == Mode::Smart) {
      // Mark this worker's pass as SMART (no send active yet), then search from the roots.
      ctx->activate(pass, {});
      activate_upstream(*ctx, pass, {start});
    }
    report = run_pass(*ctx, pass, retain_graph, std::move(root), autograd::InputBuffer(0), start, -1);
  } catch (...) {
    ctx->abandon(pass);
    spread_abandon(*ctx, pass, -1);
    throw;
  }
  const auto missing = report.never_run();
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing)
      list += "\n  " + m;
    throw Error(detail::concat("distributed backward of context ", context_id, " (",
                               mode == Mode::Fast ? "FAST" : "SMART", " mode) ended with ", missing.size(),
                               " send functions that never received gradients; the gradients that depend on them are "
                               "missing. Each is an RPC whose result does not lead to the roots.",
                               mode == Mode::Fast ? " Run backward in SMART mode, which waits only for sends on a path "
                                                    "to the roots, or make such calls outside the context:"
                                                  : "",
                               list),
                "dist_autograd", 0);
  }
}

std::vector<std::pair<Tensor, Tensor>> get_gradients(int64_t context_id) {
  return contexts().retrieve(context_id)->gradients();
}

Tensor get_gradient(int64_t context_id, const Tensor& leaf) { return contexts().retrieve(context_id)->gradient(leaf); }

void release_context(int64_t context_id) {
  if (ContextContainer::current_id() == context_id) ContextContainer::set_current_id(-1);
  auto ctx = contexts().erase(context_id);
  DDPSCOPE_CHECK(ctx != nullptr, "no distributed autograd context with id ", context_id);
  if (!rpc::is_initialized()) return;
  const int32_t self = self_id();
  for (int32_t w : ctx->known_workers()) {
    if (w != self) rpc::rpc_async(w, kReleaseFunction, ReleaseMessage{context_id, self}.encode());
  }
}

DebugInfo debug_info() {
  return {static_cast<int64_t>(contexts().size()), g_passes_running.load(), g_gradient_messages.load(),
          static_cast<int64_t>(contexts().passes_held())};
}

}  // namespace ddpscope::dist_autograd
