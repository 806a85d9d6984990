// RpcAgent: one worker's RPC endpoint. One per rank of a ddpscope MPI job; the names
// and ZeroMQ endpoints of every worker are exchanged over the process group at start.
//
// Sockets: each agent binds one ROUTER socket (on loopback when every worker runs on
// this host, else on the address the other hosts reach it by, never on every
// interface unasked) and connects one DEALER socket to each worker's ROUTER. Every
// message, request or reply, goes out through the DEALER of its destination and comes
// in through the destination's ROUTER. Every message carries the job's token; anything
// without it, or malformed, is refused, counted and dropped (wire_format.h).
//
// Graceful shutdown agrees through votes to worker 0 over RPC (shutdown_tally.h), so a
// worker that finished early sleeps instead of spinning inside MPI.
//
// A broken connection (the peer died or closed its agent) fails the calls waiting on
// that peer at once, and new calls to it until it reconnects; a peer that stops
// answering without closing its connection is caught by the calls' timeouts.
//
// Threads: one receive thread reads the ROUTER, completes replies and hands calls to
// a growing ThreadPool (thread_pool.h states the rule that keeps nested calls from
// deadlocking). Future callbacks (then) run on the pool, never on the receive thread.
// The receive thread also enforces timeouts and retries RRef control messages.
//
// Thread-safe: calls may be made from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "c10d/process_group.h"
#include "message_codec.h"
#include "rref_context.h"
#include "shutdown_tally.h"
#include "thread_pool.h"
#include "value.h"
#include "wire_format.h"

namespace ddpscope::rpc {

using Milliseconds = std::chrono::milliseconds;

struct WorkerInfo {
  std::string name;
  int32_t id = -1;
};

struct RpcBackendOptions {
  // Default deadline of a call (PyTorch's default: 60 s). DDPSCOPE_RPC_TIMEOUT_MS overrides.
  Milliseconds rpc_timeout{60000};
  int num_worker_threads = 4;     // threads kept for incoming calls
  int max_worker_threads = 256;   // the pool grows to this while calls block
  // Where this worker listens. Empty: 127.0.0.1 when every worker runs on this host,
  // else DDPSCOPE_RPC_ADDRESS, else the first non-loopback IPv4 address of this host.
  std::string listen_address;
  int64_t max_frame_bytes = int64_t{1} << 32;  // larger frames are refused by ZeroMQ
  // Empty: DDPSCOPE_RUN_TOKEN (set by the launcher), else made by worker 0 and shared.
  std::string token;
  Milliseconds control_retry_interval{250};  // RRef control messages resent this often
  bool ignore_rref_leaks = false;            // shutdown() reports leaks instead of throwing
};

// Counters of what the agent saw; readable at any time.
struct AgentStats {
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t rejected_token = 0;      // messages without the job's token
  uint64_t rejected_malformed = 0;  // truncated, oversized, unknown type or dtype, ...
  uint64_t calls_served = 0;
  uint64_t late_replies = 0;        // replies to calls that had timed out already
  uint64_t control_retries = 0;
  std::string last_rejection;       // why the last message was refused
};

// Errors of RPC: a remote function's failure ("Error on worker 1 (worker1): ..."), a
// timeout, an unknown worker or function, a closed agent.
class RpcError : public Error {
 public:
  explicit RpcError(const std::string& what) : Error(what, "rpc", 0) {}
};

class RpcAgent : public std::enable_shared_from_this<RpcAgent> {
 public:
  // Collective over `group`: every rank constructs its agent together. Messages are
  // read once start_receiving() is called (init_rpc does, after publishing the agent).
  static std::shared_ptr<RpcAgent> create(const std::string& name, RpcBackendOptions options,
                                          std::shared_ptr<c10d::ProcessGroup> group);
  void start_receiving();
  ~RpcAgent();
  RpcAgent(const RpcAgent&) = delete;
  RpcAgent& operator=(const RpcAgent&) = delete;

  const WorkerInfo& self() const { return workers_[static_cast<size_t>(self_)]; }
  const std::vector<WorkerInfo>& workers() const { return workers_; }
  // Throws RpcError listing the known workers when there is none of that name or id.
  const WorkerInfo& worker(const std::string& name) const;
  const WorkerInfo& worker(int32_t id) const;
  const RpcBackendOptions& options() const { return options_; }
  std::string endpoint() const { return endpoint_; }  // where this agent listens
  const std::string& endpoint_of(int32_t id) const { return endpoints_.at(static_cast<size_t>(id)); }
  AgentStats stats() const;
  RRefContext& rrefs() { return *rrefs_; }
  ThreadPool& pool() { return *pool_; }

  // Runs `function` on `dst` with `args`. Timeout zero: options().rpc_timeout.
  std::shared_ptr<ValueFuture> call(int32_t dst, const std::string& function, ValueList args,
                                    Milliseconds timeout);
  // remote(): runs `function` on `dst`, which keeps the result; returns the creator's RRef.
  RRef remote(int32_t dst, const std::string& function, ValueList args, Milliseconds timeout);
  // to_here() of a UserRRef: fetches the value from its owner.
  std::shared_ptr<ValueFuture> fetch(const RRefImpl& rref, Milliseconds timeout);

  // Graceful: waits until every worker's calls and RRef messages are done (collective),
  // then reports RRefs whose forks are still alive (throws RpcError naming them unless
  // options().ignore_rref_leaks). Not graceful: stops at once; pending calls fail.
  void shutdown(bool graceful);
  bool running() const { return running_.load(); }

  // Test hooks: hold incoming messages of `type` for `delay` (the next `count` of
  // them), so tests can reorder the protocol's messages; drop the next `count`.
  void inject_delay(wire::MessageType type, Milliseconds delay, int count);
  void inject_drop(wire::MessageType type, int count);
  const std::string& token_for_tests() const { return token_; }

 private:
  RpcAgent(RpcBackendOptions options, std::shared_ptr<c10d::ProcessGroup> group);
  void start(const std::string& name);

  using Clock = std::chrono::steady_clock;
  struct Pending {
    std::shared_ptr<ValueFuture> future;  // null for control messages
    int32_t dst = -1;
    std::string what;  // "rpc_sync of 'add'": for errors and probes
    Clock::time_point deadline;
    Milliseconds timeout{0};
    // Control messages: resent until acknowledged or the deadline passes.
    std::shared_ptr<OutgoingMessage> resend;
    Clock::time_point next_retry;
    std::function<void()> on_ack;
  };
  struct Received {
    std::vector<std::shared_ptr<zmq::message_t>> frames;  // without the routing identity
    int64_t t_begin_ticks = 0;
    Clock::time_point due;  // when a delayed message is handled
  };

  uint64_t next_msg_id();
  // A caller's pending reply: its future, destination and deadline.
  Pending pending_call(int32_t dst, std::string what, Milliseconds timeout);
  std::shared_ptr<ValueFuture> make_future();
  // `in_context`: the message carries the calling thread's autograd context, if any.
  std::shared_ptr<OutgoingMessage> request(wire::MessageType type, int32_t dst, Value body,
                                           uint64_t msg_id, bool in_context);
  void send(int32_t dst, const OutgoingMessage& m, const std::string& name, bool may_alias);
  // Registers a pending reply, then sends.
  void send_request(int32_t dst, std::shared_ptr<OutgoingMessage> m, Pending p);
  void send_control(int32_t dst, wire::MessageType type, std::vector<int64_t> ids,
                    std::function<void()> on_ack);
  void reply(const wire::Header& request, wire::MessageType type, Value body,
             const std::string& name);
  void reply_error(const wire::Header& request, const std::string& message, const std::string& name);

  void receive_loop();
  void read_monitor(int32_t peer);
  // Fails every call waiting on `peer` (its connection broke).
  void fail_calls_to(int32_t peer);
  void check_reachable(int32_t dst, const std::string& what) const;
  void handle(Received r);
  void handle_reply(const wire::DecodedMessage& m, Received& r);
  void serve_call(wire::DecodedMessage m, Received r);
  void serve_remote_call(wire::DecodedMessage m, Received r);
  // Replies to request `h` with `result` once it completes (its value or its error).
  void answer_when_done(const std::shared_ptr<ValueFuture>& result, const wire::Header& h,
                        const std::string& name, bool count_served);
  void expire(Clock::time_point now);
  // Distributed autograd's part of receiving and serving (autograd_hooks.h).
  void received_in_context(const wire::Header& h, Value& value);
  std::shared_ptr<void> enter_context(const wire::Header& h);
  Clock::time_point next_wakeup(Clock::time_point now);
  void reject(wire::Rejection why, const std::string& what);
  // The stats as run-file metrics (iteration -1), at shutdown.
  void record_stats() const;
  Value decode_body(const wire::WireValue& body, const Received& r);
  void wait_until_quiet(Clock::time_point deadline);
  std::string worker_label(int32_t id) const;

  RpcBackendOptions options_;
  std::shared_ptr<c10d::ProcessGroup> group_;
  std::string token_;
  std::vector<WorkerInfo> workers_;
  int32_t self_ = -1;
  std::string endpoint_;
  std::vector<std::string> endpoints_;

  zmq::context_t zmq_;
  zmq::socket_t router_;
  struct Peer {
    std::mutex mutex;
    std::unique_ptr<zmq::socket_t> dealer;
    // ZeroMQ's monitor of the dealer: says when the connection to the peer breaks (the
    // process died or closed its socket), so calls to it fail at once, not at timeout.
    std::unique_ptr<zmq::socket_t> monitor;
    std::atomic<bool> lost{false};
    std::atomic<int64_t> lost_at_ms{0};  // steady clock, when `lost` was set
  };
  std::vector<std::unique_ptr<Peer>> peers_;

  std::unique_ptr<ThreadPool> pool_;
  std::shared_ptr<RRefContext> rrefs_;
  std::unique_ptr<ShutdownTally> shutdown_tally_;  // worker 0 counts the shutdown votes
  std::thread receiver_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_receiving_{false};
  std::atomic<uint64_t> next_msg_{1};

  mutable std::mutex mutex_;  // pending_, stats_, injections
  std::condition_variable quiet_cv_;
  std::unordered_map<uint64_t, Pending> pending_;
  AgentStats stats_;
  struct Injection {
    Milliseconds delay{0};
    int delay_count = 0;
    int drop_count = 0;
  };
  std::map<uint8_t, Injection> injections_;
  std::vector<Received> delayed_;  // receive thread only
  std::vector<zmq::pollitem_t> poll_items_;  // receive thread only
};

}  // namespace ddpscope::rpc
