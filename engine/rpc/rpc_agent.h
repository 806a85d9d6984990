// RpcAgent: one worker's RPC endpoint: calls out and their timeouts, serving calls in,
// RRef messages, graceful shutdown. One per rank of a ddpscope MPI job; how messages
// travel is its transport's business (transport.h: shared memory and TCP in a job by default;
// rpc_bootstrap.h opens it).
// Every message carries the job's token; anything without it, or malformed, is refused,
// counted and dropped (wire_format.h).
//
// Graceful shutdown agrees through votes to worker 0 over RPC (shutdown_tally.h), so a
// worker that finished early sleeps instead of spinning inside MPI.
//
// A broken connection (the peer died or closed its agent) fails the calls waiting on
// that peer at once, and new calls to it until it reconnects; a peer that stops
// answering without closing its connection is caught by the calls' timeouts.
//
// Threads: one receive thread polls the transport, completes replies and hands calls to
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
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "c10d/process_group.h"
#include "function_registry.h"
#include "message_codec.h"
#include "rpc_options.h"
#include "rref_context.h"
#include "shutdown_tally.h"
#include "thread_pool.h"
#include "transport.h"
#include "value.h"
#include "wire_format.h"

namespace ddpscope::rpc {

class RpcAgent : public std::enable_shared_from_this<RpcAgent>, private TransportEvents {
 public:
  // Collective over `group`: every rank constructs its agent together. Messages are
  // read once start_receiving() is called (init_rpc does, after publishing the agent).
  static std::shared_ptr<RpcAgent> create(const std::string& name, RpcBackendOptions options,
                                          std::shared_ptr<c10d::ProcessGroup> group);
  // An agent on a transport of the caller's, the workers agreed already (tests run
  // several in one process this way). Connects the transport.
  static std::shared_ptr<RpcAgent> create(WorkerSetup setup, RpcBackendOptions options,
                                          std::unique_ptr<Transport> transport);
  void start_receiving();
  ~RpcAgent();
  RpcAgent(const RpcAgent&) = delete;
  RpcAgent& operator=(const RpcAgent&) = delete;

  const WorkerInfo& self() const { return setup_.workers[static_cast<size_t>(setup_.self)]; }
  const std::vector<WorkerInfo>& workers() const { return setup_.workers; }
  // Throws RpcError listing the known workers when there is none of that name or id.
  const WorkerInfo& worker(const std::string& name) const;
  const WorkerInfo& worker(int32_t id) const;
  const RpcBackendOptions& options() const { return options_; }
  std::string endpoint() const { return endpoint_of(setup_.self); }  // where this agent listens
  const std::string& endpoint_of(int32_t id) const { return setup_.endpoints.at(static_cast<size_t>(id)); }
  AgentStats stats() const;
  RRefContext& rrefs() { return *rrefs_; }
  ThreadPool& pool() { return *pool_; }

  // Runs `function` on `dst` with `args`. Timeout zero: options().rpc_timeout.
  std::shared_ptr<ValueFuture> call(int32_t dst, const std::string& function, ValueList args, Milliseconds timeout);
  // remote(): runs `function` on `dst`, which keeps the result; returns the creator's RRef.
  RRef remote(int32_t dst, const std::string& function, ValueList args, Milliseconds timeout);
  // to_here() of a UserRRef: fetches the value from its owner.
  std::shared_ptr<ValueFuture> fetch(const RRefImpl& rref, Milliseconds timeout);

  // Graceful: waits until every worker's calls and RRef messages are done (collective),
  // then reports RRefs whose forks are still alive (throws RpcError naming them unless
  // options().ignore_rref_leaks). Not graceful: stops at once; pending calls fail.
  void shutdown(bool graceful);
  bool running() const { return running_.load(); }

  const std::string& token_for_tests() const { return setup_.token; }

 private:
  RpcAgent(WorkerSetup setup, RpcBackendOptions options, std::unique_ptr<Transport> transport);
  void start();

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
  using Received = IncomingMessage;

  uint64_t next_msg_id();
  // A caller's pending reply: its future, destination and deadline.
  Pending pending_call(int32_t dst, std::string what, Milliseconds timeout);
  std::shared_ptr<ValueFuture> make_future();
  // `in_context`: the message carries the calling thread's autograd context, if any.
  std::shared_ptr<OutgoingMessage> request(wire::MessageType type, int32_t dst, Value body, uint64_t msg_id,
                                           bool in_context);
  void send(int32_t dst, const OutgoingMessage& m, const std::string& name, bool may_alias);
  // Registers a pending reply, then sends.
  void send_request(int32_t dst, std::shared_ptr<OutgoingMessage> m, Pending p);
  void send_control(int32_t dst, wire::MessageType type, std::vector<int64_t> ids, std::function<void()> on_ack);
  void reply(const wire::Header& request, wire::MessageType type, Value body, const std::string& name);
  void reply_error(const wire::Header& request, const std::string& message, const std::string& name);

  void receive_loop();
  // TransportEvents, on the receive thread.
  void on_message(IncomingMessage message) override;
  void on_rejected(wire::Rejection why, const std::string& what) override;
  void on_peer_connected(int32_t peer) override;
  void on_peer_lost(int32_t peer) override;
  // Fails every call waiting on `peer` (its connection broke).
  void fail_calls_to(int32_t peer);
  void check_reachable(int32_t dst, const std::string& what) const;
  void handle(Received r);
  void handle_reply(const wire::DecodedMessage& m, Received& r);
  void serve_call(wire::DecodedMessage m, Received r);
  void serve_remote_call(wire::DecodedMessage m, Received r);
  // Replies to request `h` with `result` once it completes (its value or its error).
  void answer_when_done(const std::shared_ptr<ValueFuture>& result, const wire::Header& h, const std::string& name,
                        bool count_served);
  void expire(Clock::time_point now);
  // Distributed autograd's part of receiving and serving (autograd_hooks.h).
  void received_in_context(const wire::Header& h, Value& value);
  std::shared_ptr<void> enter_context(const wire::Header& h);
  // The graceful-shutdown vote, served by worker 0's agent itself.
  Value shutdown_vote(const ValueList& args);
  // Of `workers`, those that do not answer kAlive within `within` (stopped, hung, gone).
  std::vector<int32_t> unanswering(const std::vector<int32_t>& workers, Milliseconds within);
  // The stats as run-file metrics (iteration -1), at shutdown.
  void record_stats() const;
  Value decode_body(const wire::WireValue& body, const Received& r);
  void wait_until_quiet(Clock::time_point deadline);
  std::string worker_label(int32_t id) const;

  WorkerSetup setup_;
  RpcBackendOptions options_;
  std::unique_ptr<Transport> transport_;
  struct PeerState {
    std::atomic<bool> lost{false};
    std::atomic<int64_t> lost_at_ms{0};  // steady clock, when `lost` was set
  };
  std::vector<std::unique_ptr<PeerState>> peer_state_;

  std::unique_ptr<ThreadPool> pool_;
  std::shared_ptr<RRefContext> rrefs_;
  std::unique_ptr<ShutdownTally> shutdown_tally_;  // worker 0 counts the shutdown votes
  std::shared_ptr<const RegisteredFunction> shutdown_vote_fn_;
  std::shared_ptr<const RegisteredFunction> alive_fn_;  // kAlive: answered while this agent lives
  std::thread receiver_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_receiving_{false};
  std::atomic<uint64_t> next_msg_{1};

  mutable std::mutex mutex_;  // pending_, stats_
  std::condition_variable quiet_cv_;
  std::unordered_map<uint64_t, Pending> pending_;
  AgentStats stats_;
};

}  // namespace ddpscope::rpc
