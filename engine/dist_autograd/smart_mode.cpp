#include "smart_mode.h"

#include <map>

#include "dist_engine.h"
#include "messages.h"
#include "probe.h"
#include "rpc/rpc.h"
#include "send_recv_functions.h"

namespace ddpscope::dist_autograd {
namespace {

// The exchange for the run file: "smart.ask" when this worker asks `peer` to activate the
// send function of message `autograd_id`; "smart.active" when one of its own send
// functions becomes active (peer: the worker of its recv end).
void record_exchange(bool ask, int64_t ctx_id, int64_t autograd_id, int32_t peer) {
  if (!probes::enabled()) return;
  probes::EventArgs args;
  args.id = ctx_id;
  args.id2 = autograd_id;
  args.peer = static_cast<int16_t>(peer);
  if (ask) {
    DDPSCOPE_INSTANT(probes::Kind::DistFunction, "smart.ask", args);
  } else {
    DDPSCOPE_INSTANT(probes::Kind::DistFunction, "smart.active", args);
  }
}

}  // namespace

void activate_upstream(DistAutogradContext& ctx, int64_t pass, const std::vector<autograd::Node*>& starts) {
  std::map<int32_t, std::vector<int64_t>> by_worker;
  std::vector<autograd::Node*> stack;
  for (auto* n : starts) {
    if (ctx.first_search(pass, n)) stack.push_back(n);
  }
  while (!stack.empty()) {
    autograd::Node* n = stack.back();
    stack.pop_back();
    if (n->kind() == autograd::NodeKind::Recv) {
      auto* recv = static_cast<RecvFunction*>(n);
      by_worker[recv->peer()].push_back(recv->autograd_id());
      record_exchange(true, ctx.id(), recv->autograd_id(), recv->peer());
    }
    for (const auto& e : n->next_edges()) {
      if (e.is_valid() && ctx.first_search(pass, e.function.get())) stack.push_back(e.function.get());
    }
  }
  std::vector<std::shared_ptr<rpc::ValueFuture>> replies;
  for (auto& [worker, ids] : by_worker) {
    replies.push_back(rpc::rpc_async(worker, kActivateFunction, ActivateMessage{ctx.id(), pass, ids}.encode()));
  }
  for (auto& r : replies)
    r->wait();
}

rpc::Value receive_activation(const rpc::ValueList& a) {
  const ActivateMessage m = ActivateMessage::decode(a);
  auto ctx = ContextContainer::instance().retrieve(m.ctx_id);
  const int64_t pass = m.pass;
  std::vector<autograd::Node*> starts;
  for (const auto& s : ctx->activate(pass, m.send_ids)) {
    record_exchange(false, ctx->id(), s->autograd_id(), s->peer());
    starts.push_back(s.get());
  }
  if (!starts.empty()) activate_upstream(*ctx, pass, starts);
  return rpc::Value();
}

}  // namespace ddpscope::dist_autograd
