// The RPC framework: call functions on other workers of a job, and hold references to
// values that live there (PyTorch's torch.distributed.rpc, in C++).
//
//   auto world = c10d::init_process_group();            // under mpirun
//   rpc::init_rpc("", {});                              // "worker<rank>", defaults
//   if (world->rank() == 0) {
//     Tensor t3 = rpc::rpc_sync("worker1", add, t1, t2).tensor();        // blocking
//     auto fut = rpc::rpc_async("worker1", "mul", {t1, t2});             // a future
//     auto doubled = fut->then([](rpc::ValueFuture& f) { ... });        // runs on the pool
//     rpc::RRef r = rpc::remote("worker1", "add", {t1, t2});             // stays there
//     Tensor v = r.to_here().tensor();
//   }
//   rpc::shutdown();                                    // every worker, graceful
//
// Every worker runs the same program and registers the same functions
// (function_registry.h). Errors: RpcError ("Error on worker 1 (worker1): ...", timeouts
// naming the function, the destination and the time waited). Threads, sockets and the
// RRef protocol are described in rpc_agent.h and rref_context.h; the bytes on the wire
// in WIRE.md.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>

#include "c10d/process_group.h"
#include "function_registry.h"
#include "rpc_agent.h"
#include "rref.h"
#include "value.h"

namespace ddpscope::rpc {

// Zero: the agent's rpc_timeout.
inline constexpr Milliseconds kDefaultTimeout{0};

// A destination: a worker's name or id.
class WorkerRef {
 public:
  WorkerRef(const char* name) : name_(name) {}
  WorkerRef(std::string name) : name_(std::move(name)) {}
  WorkerRef(int id) : id_(id) {}
  WorkerRef(const WorkerInfo& info) : id_(info.id) {}
  int32_t resolve(const RpcAgent& agent) const;
  bool resolve_is_default() const { return name_.empty() && id_ < 0; }

 private:
  std::string name_;
  int32_t id_ = -1;
};

// Starts this worker's agent; collective over `group` (the world when null). `name`
// empty: "worker<rank>".
void init_rpc(const std::string& name = "", RpcBackendOptions options = {},
              std::shared_ptr<c10d::ProcessGroup> group = nullptr);
// Graceful (default): waits until every worker's calls and RRef messages are done;
// every worker must call it. Throws RpcError naming RRefs leaked on this worker.
void shutdown(bool graceful = true);
bool is_initialized();
RpcAgent& agent();  // throws when RPC is not initialised

// An RRef owned by this worker holding `value` (PyTorch's RRef(value)).
RRef make_rref(Value value);

WorkerInfo get_worker_info(const WorkerRef& worker = WorkerRef(-1));  // default: this worker

std::shared_ptr<ValueFuture> rpc_async(const WorkerRef& to, const FunctionRef& fn, ValueList args = {},
                                       Milliseconds timeout = kDefaultTimeout);
Value rpc_sync(const WorkerRef& to, const FunctionRef& fn, ValueList args = {}, Milliseconds timeout = kDefaultTimeout);
RRef remote(const WorkerRef& to, const FunctionRef& fn, ValueList args = {}, Milliseconds timeout = kDefaultTimeout);

// The same with the arguments listed: rpc_sync("worker1", add, t1, t2).
template <typename A0, typename... A>
requires(!std::is_same_v<std::decay_t<A0>, ValueList>) Value
    rpc_sync(const WorkerRef& to, const FunctionRef& fn, A0&& a0, A&&... rest) {
  return rpc_sync(to, fn, ValueList{Value(std::forward<A0>(a0)), Value(std::forward<A>(rest))...});
}
template <typename A0, typename... A>
requires(!std::is_same_v<std::decay_t<A0>, ValueList>) std::shared_ptr<ValueFuture> rpc_async(const WorkerRef& to,
                                                                                              const FunctionRef& fn,
                                                                                              A0&& a0, A&&... rest) {
  return rpc_async(to, fn, ValueList{Value(std::forward<A0>(a0)), Value(std::forward<A>(rest))...});
}
template <typename A0, typename... A>
requires(!std::is_same_v<std::decay_t<A0>, ValueList>) RRef
    remote(const WorkerRef& to, const FunctionRef& fn, A0&& a0, A&&... rest) {
  return remote(to, fn, ValueList{Value(std::forward<A0>(a0)), Value(std::forward<A>(rest))...});
}

}  // namespace ddpscope::rpc
