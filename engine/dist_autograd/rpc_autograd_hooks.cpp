// The hooks by which RPC records send and recv functions (rpc/autograd_hooks.h).
#include <cstdio>
#include <functional>

#include "autograd/autograd_meta.h"
#include "ddpscope/log.h"
#include "autograd/grad_mode.h"
#include "probe.h"
#include "context.h"
#include "dist_engine.h"
#include "rpc/autograd_hooks.h"
#include "rpc/rpc.h"
#include "send_recv_functions.h"

namespace ddpscope::dist_autograd {
namespace {

// The tensors of `v` that require grad, depth first: the order both ends agree on.
void tensors_requiring_grad(const rpc::Value& v, std::vector<Tensor>& out) {
  if (v.is_tensor()) {
    if (v.tensor().requires_grad()) out.push_back(v.tensor());
  } else if (v.is_list()) {
    for (const auto& e : v.list())
      tensors_requiring_grad(e, out);
  }
}

void record_function(bool send, int64_t ctx_id, int64_t autograd_id, int32_t peer) {
  probes::EventArgs args;
  args.id = ctx_id;
  args.id2 = autograd_id;
  args.peer = static_cast<int16_t>(peer);
  if (send) {
    DDPSCOPE_INSTANT(probes::Kind::DistFunction, "send", args);
  } else {
    DDPSCOPE_INSTANT(probes::Kind::DistFunction, "recv", args);
  }
}

class Hooks : public rpc::AutogradHooks {
 public:
  int64_t current_context() override { return ContextContainer::current_id(); }

  bool on_send(int64_t ctx_id, int32_t dst, int64_t autograd_id, const rpc::Value& value) override {
    auto ctx = ContextContainer::instance().get_or_create(ctx_id);
    ctx->add_known_worker(dst);
    if (!autograd::GradMode::is_enabled()) return false;
    std::vector<Tensor> tensors;
    tensors_requiring_grad(value, tensors);
    if (tensors.empty()) return false;
    auto send = std::make_shared<SendFunction>(ctx_id, autograd_id, dst);
    autograd::edge_list edges;
    for (const auto& t : tensors) {
      edges.push_back(autograd::gradient_edge(t));
      send->add_input_metadata(t);
    }
    send->set_next_edges(std::move(edges));
    ctx->add_send(autograd_id, std::move(send), dst);
    record_function(true, ctx_id, autograd_id, dst);
    return true;
  }

  void on_receive(int64_t ctx_id, int32_t src, int64_t autograd_id, bool recorded, rpc::Value& value) override {
    auto ctx = ContextContainer::instance().get_or_create(ctx_id);
    ctx->add_known_worker(src);
    if (!recorded) return;
    std::vector<Tensor> tensors;
    tensors_requiring_grad(value, tensors);
    auto recv = std::make_shared<RecvFunction>(ctx_id, autograd_id, src);
    // The received tensors become the recv function's outputs (they share its impl
    // with the Value, so the caller sees them with their history).
    for (const auto& t : tensors) {
      autograd::AutogradMeta& meta = autograd::materialize_meta(t);
      meta.grad_fn = recv;
      meta.output_nr = recv->add_input_metadata(t);
    }
    ctx->add_recv(autograd_id, std::move(recv), src);
    record_function(false, ctx_id, autograd_id, src);
  }

  void on_worker_lost(int32_t worker) override {
    // Beyond PyTorch (its issue #26379): contexts of a dead originating worker would live
    // until this process ends; they are collected as soon as its connection breaks.
    const size_t n = ContextContainer::instance().erase_started_by(worker);
    if (n > 0) {
      log::info("dist_autograd: worker {} is gone; released {} of its contexts here", worker, n);
    }
  }

  std::shared_ptr<void> enter(int64_t ctx_id) override {
    ContextContainer::instance().get_or_create(ctx_id);
    return std::make_shared<ContextContainer::ScopedCurrent>(ctx_id);
  }
};

}  // namespace

void install_rpc_hooks() { rpc::set_autograd_hooks(std::make_shared<Hooks>()); }

}  // namespace ddpscope::dist_autograd
