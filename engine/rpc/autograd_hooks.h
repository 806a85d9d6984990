// AutogradHooks: where distributed autograd (engine/dist_autograd, a layer above) joins
// the RPC agent. RPC knows nothing of autograd; it asks the installed hooks, if any, at
// the four points where a message meets a context:
//   - a request leaves (call, remote, to_here): the caller's current context goes in the
//     header, and the hooks may record a send function for the tensors that require grad;
//   - a request arrives with a context: the hooks may record a recv function for its
//     tensors, and the function runs with that context current (so nested calls carry it);
//   - a reply leaves, or arrives, inside a context: the same for the reply's tensors.
// A message whose send function was recorded has wire::kFlagAutograd set; its send/recv
// pair is named by the message's autograd id (autograd_message_id below).
//
// Installed once per process (dist_autograd does it when it is linked in); thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "value.h"
#include "wire_format.h"

namespace ddpscope::rpc {

class AutogradHooks {
 public:
  virtual ~AutogradHooks() = default;
  // The calling thread's context, or -1.
  virtual int64_t current_context() = 0;
  // `value` leaves for worker `dst` in context `ctx_id`: record a send function for the
  // tensors in it that require grad. True when one was recorded.
  virtual bool on_send(int64_t ctx_id, int32_t dst, int64_t autograd_id, const Value& value) = 0;
  // `value` arrived from worker `src` in context `ctx_id` (made here if new). When the
  // sender recorded a send function (`recorded`), the tensors that require grad are
  // replaced by outputs of a recv function.
  virtual void on_receive(int64_t ctx_id, int32_t src, int64_t autograd_id, bool recorded, Value& value) = 0;
  // Makes `ctx_id` the calling thread's context while the returned object lives.
  virtual std::shared_ptr<void> enter(int64_t ctx_id) = 0;
  // The connection to `worker` broke (it died or shut down): contexts it started can
  // never be released by it. Called on the agent's receive thread; must not block.
  virtual void on_worker_lost(int32_t worker) = 0;
};

void set_autograd_hooks(std::shared_ptr<AutogradHooks> hooks);
std::shared_ptr<AutogradHooks> autograd_hooks();  // null when none is installed

// The autograd id of a message's send/recv pair: its msg_id for a request, with bit 47
// set for the reply (which repeats the request's msg_id). Counters stay below 2^47.
inline constexpr int64_t kReplyAutogradBit = int64_t{1} << 47;
inline int64_t autograd_message_id(const wire::Header& h) {
  const bool reply = h.type == static_cast<uint8_t>(wire::MessageType::Response);
  return static_cast<int64_t>(h.msg_id) ^ (reply ? kReplyAutogradBit : 0);
}

}  // namespace ddpscope::rpc
