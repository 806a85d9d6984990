#include "rpc_agent.h"
#include "ddpscope/log.h"

#include <cstdio>

#include "agent_internal.h"
#include "autograd_hooks.h"
#include "ddpscope/env.h"
#include "rpc_bootstrap.h"

namespace ddpscope::rpc {

using wire::MessageType;
using namespace agent_internal;

// ---------------------------------------------------------------- start and stop

RpcAgent::RpcAgent(WorkerSetup setup, RpcBackendOptions options, std::unique_ptr<Transport> transport)
    : setup_(std::move(setup)), options_(std::move(options)), transport_(std::move(transport)) {}

std::shared_ptr<RpcAgent> RpcAgent::create(const std::string& name, RpcBackendOptions options,
                                           std::shared_ptr<c10d::ProcessGroup> group) {
  DDPSCOPE_CHECK(group != nullptr, "init_rpc: no process group");
  Bootstrap b = bootstrap_over_group(*group, name, options);
  if (options.wrap_transport) b.transport = options.wrap_transport(std::move(b.transport));
  return create(std::move(b.setup), std::move(options), std::move(b.transport));
}

std::shared_ptr<RpcAgent> RpcAgent::create(WorkerSetup setup, RpcBackendOptions options,
                                           std::unique_ptr<Transport> transport) {
  DDPSCOPE_CHECK(transport != nullptr, "init_rpc: no transport");
  const auto n = static_cast<int32_t>(setup.workers.size());
  DDPSCOPE_CHECK(setup.self >= 0 && setup.self < n && setup.endpoints.size() == setup.workers.size(),
                 "init_rpc: worker ", setup.self, " of ", n, " workers with ", setup.endpoints.size(), " endpoints");
  std::shared_ptr<RpcAgent> agent(new RpcAgent(std::move(setup), std::move(options), std::move(transport)));
  agent->start();
  return agent;
}

void RpcAgent::start() {
  options_.rpc_timeout = Milliseconds(env_int("DDPSCOPE_RPC_TIMEOUT_MS", options_.rpc_timeout.count(), 1));
  DDPSCOPE_CHECK(options_.rpc_timeout.count() > 0, "init_rpc: rpc_timeout must be positive");
  DDPSCOPE_CHECK(options_.num_worker_threads >= 1 && options_.max_worker_threads >= options_.num_worker_threads,
                 "init_rpc: need 1 <= num_worker_threads (", options_.num_worker_threads, ") <= max_worker_threads (",
                 options_.max_worker_threads, ")");
  transport_->expect_token(setup_.token);
  transport_->connect(setup_.endpoints);
  for (size_t r = 0; r < setup_.workers.size(); ++r)
    peer_state_.push_back(std::make_unique<PeerState>());
  pool_ = std::make_unique<ThreadPool>(options_.num_worker_threads, options_.max_worker_threads);
  std::weak_ptr<RpcAgent> weak = weak_from_this();
  shutdown_tally_ = std::make_unique<ShutdownTally>(static_cast<int>(setup_.workers.size()));
  // Served by this agent, not through the process-wide registry: each agent counts its
  // own job's votes, also when tests run several agents in one process.
  auto vote = std::make_shared<RegisteredFunction>();
  vote->fn = [weak](const ValueList& a) -> Value {
    auto agent = weak.lock();
    DDPSCOPE_CHECK(agent != nullptr, "shutdown vote: the RPC agent is gone");
    return agent->shutdown_vote(a);
  };
  shutdown_vote_fn_ = std::move(vote);
  auto alive = std::make_shared<RegisteredFunction>();
  alive->fn = [](const ValueList&) -> Value { return Value(int64_t{1}); };
  alive_fn_ = std::move(alive);
  rrefs_ = std::make_shared<RRefContext>(
      setup_.self, [weak](int32_t dst, MessageType type, std::vector<int64_t> ids, std::function<void()> on_ack) {
        if (auto agent = weak.lock()) agent->send_control(dst, type, std::move(ids), std::move(on_ack));
      });
  running_ = true;
}

// Worker 0's side of a vote: it waits a quarter of the RPC timeout for the round to
// complete, then asks the workers that have not voted whether they are alive (another
// quarter), so that the voter hears back in half its call's timeout: a loaded machine's
// delays fit in the other half (a voter whose answer still comes late votes again).
Value RpcAgent::shutdown_vote(const ValueList& a) {
  const Milliseconds wait = options_.rpc_timeout / 4;
  const Milliseconds ask = std::max(options_.rpc_timeout / 4, Milliseconds(200));
  return Value(
      shutdown_tally_->vote(a.at(0).to_int(), static_cast<int32_t>(a.at(1).to_int()), a.at(2).to_int(), wait,
                            [this, ask](const std::vector<int32_t>& missing) { return unanswering(missing, ask); }));
}

std::vector<int32_t> RpcAgent::unanswering(const std::vector<int32_t>& workers, Milliseconds within) {
  std::vector<std::pair<int32_t, std::shared_ptr<ValueFuture>>> asked;
  std::vector<int32_t> gone;
  for (int32_t w : workers) {
    if (w == setup_.self) continue;  // this agent answers: it is running this
    try {
      asked.emplace_back(w, call(w, kAlive, {}, within));
    } catch (const std::exception&) {
      gone.push_back(w);
    }
  }
  for (auto& [w, answer] : asked) {
    try {
      answer->wait();
    } catch (const std::exception&) {
      gone.push_back(w);
    }
  }
  return gone;
}

void RpcAgent::start_receiving() {
  if (receiver_.joinable()) return;
  receiver_ = std::thread([this] {
    probes::set_thread_name("rpc: receive");
    receive_loop();
  });
}

RpcAgent::~RpcAgent() {
  try {
    shutdown(false);
  } catch (...) {
  }
}

void RpcAgent::wait_until_quiet(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (Clock::now() < deadline) {
    if (pending_.empty() && rrefs_->pending() == 0) return;
    quiet_cv_.wait_for(lock, Milliseconds(20));
  }
}

void RpcAgent::shutdown(bool graceful) {
  if (!running_.load()) return;
  std::vector<std::string> leaks;
  if (graceful) {
    // Every worker keeps serving until all are quiet at once: no call, reply or RRef
    // message of anyone in flight (a message in flight always has a pending entry on
    // the worker that waits for its reply).
    const auto deadline = Clock::now() + options_.rpc_timeout;
    int late_answers = 0;  // votes in a row worker 0 did not answer in time
    for (int64_t round = 0;;) {
      wait_until_quiet(deadline);
      size_t busy;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        busy = pending_.size() + rrefs_->pending();
      }
      int64_t total = 0;
      try {
        total = call(0, kShutdownVote,
                     ValueList{Value(round), Value(int64_t{setup_.self}), Value(static_cast<int64_t>(busy))},
                     options_.rpc_timeout)
                    ->wait()
                    .to_int();
        late_answers = 0;
      } catch (const RpcTimeout& e) {
        // Worker 0 decides a vote in most of the RPC timeout (it waits for the round, then
        // asks who has not voted), so on a loaded machine its answer can come late: the same
        // vote again. A worker 0 that stays silent that many times in a row is gone.
        if (++late_answers < ShutdownTally::kMissesBeforeGone) continue;
        log::warn("rpc: worker {}: graceful shutdown could not agree with the others ({}); stopping anyway",
                  setup_.self, e.what());
        break;
      } catch (const std::exception& e) {
        log::warn("rpc: worker {}: graceful shutdown could not agree with the others ({}); stopping anyway",
                  setup_.self, e.what());
        break;
      }
      if (total == ShutdownTally::kStillWaiting) continue;  // a worker still works: vote again
      if (total == 0) {
        if (setup_.self == 0) shutdown_tally_->wait_until_all_answered(round, options_.rpc_timeout);
        break;
      }
      ++round;
      if (Clock::now() >= deadline) {
        log::warn("rpc: worker {}: shutdown went on after {} ms with {} messages still unanswered across the job",
                  setup_.self, options_.rpc_timeout.count(), total);
        break;
      }
    }
    leaks = rrefs_->leaks();
  }
  running_ = false;
  record_stats();
  rrefs_->close();
  stop_receiving_ = true;
  if (receiver_.joinable()) receiver_.join();
  pool_.reset();  // runs what was queued, joins its threads
  std::unordered_map<uint64_t, Pending> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(pending_);
  }
  for (auto& [id, p] : left) {
    if (p.future) {
      p.future->set_error(std::make_exception_ptr(RpcError(detail::concat(
          "the RPC agent of ", self().name, " shut down before ", worker_label(p.dst), " answered the ", p.what))));
    }
  }
  transport_->close();
  if (!leaks.empty() && !options_.ignore_rref_leaks) {
    std::string list;
    for (const auto& l : leaks)
      list += "\n  " + l;
    throw RpcError(detail::concat("shutdown of ", self().name, ": ", leaks.size(),
                                  " RRefs owned here still have live forks (leaked: a UserRRef "
                                  "outlived its worker's shutdown):",
                                  list));
  }
}

// ---------------------------------------------------------------- lookups

const WorkerInfo& RpcAgent::worker(const std::string& name) const {
  for (const auto& w : setup_.workers)
    if (w.name == name) return w;
  std::string known;
  for (const auto& w : setup_.workers)
    known += (known.empty() ? "" : ", ") + w.name;
  throw RpcError(detail::concat("unknown worker '", name, "'; the workers are ", known));
}

const WorkerInfo& RpcAgent::worker(int32_t id) const {
  if (id < 0 || id >= static_cast<int32_t>(setup_.workers.size())) {
    throw RpcError(detail::concat("unknown worker id ", id, "; ids run from 0 to ", setup_.workers.size() - 1));
  }
  return setup_.workers[static_cast<size_t>(id)];
}

std::string RpcAgent::worker_label(int32_t id) const {
  if (id < 0 || id >= static_cast<int32_t>(setup_.workers.size())) return detail::concat("worker id ", id);
  return detail::concat(setup_.workers[static_cast<size_t>(id)].name, " (id ", id, ")");
}

AgentStats RpcAgent::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

// ---------------------------------------------------------------- sending

uint64_t RpcAgent::next_msg_id() {
  return static_cast<uint64_t>(wire::make_global_id(setup_.self, next_msg_.fetch_add(1)));
}

std::shared_ptr<ValueFuture> RpcAgent::make_future() {
  std::weak_ptr<RpcAgent> weak = weak_from_this();
  return std::make_shared<ValueFuture>([weak](std::function<void()> fn) {
    auto agent = weak.lock();
    if (agent && agent->pool_) {
      agent->pool_->submit(std::move(fn));
    } else {
      fn();
    }
  });
}

std::shared_ptr<OutgoingMessage> RpcAgent::request(MessageType type, int32_t dst, Value body, uint64_t msg_id,
                                                   bool in_context) {
  auto m = std::make_shared<OutgoingMessage>();
  m->header.type = static_cast<uint8_t>(type);
  m->header.src = setup_.self;
  m->header.dst = dst;
  m->header.msg_id = msg_id;
  // Calls made inside a distributed autograd context carry it (autograd_hooks.h).
  if (in_context) {
    if (auto hooks = autograd_hooks()) {
      m->header.ctx_id = hooks->current_context();
      if (m->header.ctx_id >= 0 && hooks->on_send(m->header.ctx_id, dst, autograd_message_id(m->header), body))
        m->header.flags |= wire::kFlagAutograd;
    }
  }
  wire::BodyWriter w;
  encode_value(body, w, m->tensors, [&](const RRef& r) { return rrefs_->fork_for(r, dst); });
  m->body = w.take();
  m->header.num_tensors = static_cast<uint32_t>(m->tensors.size());
  return m;
}

void RpcAgent::send(int32_t dst, const OutgoingMessage& m, const std::string& name, bool may_alias) {
  const int64_t t0 = probes::enabled() ? probes::now_ticks() : 0;
  std::vector<OutgoingFrame> frames;
  frames.reserve(3 + m.tensors.size());
  frames.push_back({setup_.token.data(), setup_.token.size(), nullptr});
  frames.push_back({&m.header, sizeof(m.header), nullptr});
  frames.push_back({m.body.data(), m.body.size(), nullptr});
  for (const Tensor& t : m.tensors) {
    // A reply's tensor may still be written by its owner: alias only what nothing else holds.
    frames.push_back(tensor_frame(t, may_alias || t.is_sole_owner_of_storage()));
  }
  try {
    transport_->send(dst, std::move(frames));
  } catch (const Error&) {
    DDPSCOPE_CHECK(running_.load(), "the RPC agent of ", self().name, " is shut down");
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.messages_sent;
  }
  record_message(probes::Kind::RpcSend, name, t0, dst, m.bytes(), m.header);
}

void RpcAgent::send_request(int32_t dst, std::shared_ptr<OutgoingMessage> m, Pending p) {
  DDPSCOPE_CHECK(running_.load(), "RPC is shut down on ", self().name, "; cannot send the ", p.what);
  if (p.future) check_reachable(dst, describe_call(p.what));
  const std::string name = p.what;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.emplace(m->header.msg_id, std::move(p));
  }
  try {
    send(dst, *m, name, /*may_alias=*/true);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.erase(m->header.msg_id);
    throw;
  }
}

void RpcAgent::send_control(int32_t dst, MessageType type, std::vector<int64_t> ids, std::function<void()> on_ack) {
  if (!running_.load()) return;
  auto m = request(type, dst, Value(int_list(ids)), next_msg_id(), /*in_context=*/false);
  Pending p;
  p.dst = dst;
  p.what = wire::message_type_name(type);
  p.timeout = options_.rpc_timeout;
  p.deadline = Clock::now() + options_.rpc_timeout;
  p.resend = m;
  p.next_retry = Clock::now() + options_.control_retry_interval;
  p.on_ack = std::move(on_ack);
  try {
    send_request(dst, m, std::move(p));
  } catch (const std::exception& e) {
    log::warn("rpc: {} could not send {} to {}: {}", self().name, wire::message_type_name(type), worker_label(dst),
              e.what());
  }
}

void RpcAgent::reply(const wire::Header& req, MessageType type, Value body, const std::string& name) {
  auto m = std::make_shared<OutgoingMessage>();
  m->header.type = static_cast<uint8_t>(type);
  m->header.src = setup_.self;
  m->header.dst = req.src;
  m->header.msg_id = req.msg_id;
  m->header.ctx_id = req.ctx_id;
  if (req.ctx_id >= 0 && type == MessageType::Response) {
    if (auto hooks = autograd_hooks()) {
      if (hooks->on_send(req.ctx_id, req.src, autograd_message_id(m->header), body))
        m->header.flags |= wire::kFlagAutograd;
    }
  }
  wire::BodyWriter w;
  encode_value(body, w, m->tensors, [&](const RRef& r) { return rrefs_->fork_for(r, req.src); });
  body = Value();  // now the reply's tensors may be the only holders of their bytes
  m->body = w.take();
  m->header.num_tensors = static_cast<uint32_t>(m->tensors.size());
  send(req.src, *m, name, /*may_alias=*/false);
}

void RpcAgent::reply_error(const wire::Header& req, const std::string& message, const std::string& name) {
  try {
    // An error that came from another worker already names it: passed on unchanged, so
    // the caller of a chain learns which worker failed, not which one relayed it.
    const bool relayed = message.rfind("Error on worker ", 0) == 0;
    reply(req, MessageType::Error,
          Value(relayed ? message : detail::concat("Error on worker ", setup_.self, " (", self().name, "): ", message)),
          name);
  } catch (const std::exception& e) {
    log::warn("rpc: {} could not report an error to {}: {}", self().name, worker_label(req.src), e.what());
  }
}

// ---------------------------------------------------------------- the API's calls

RpcAgent::Pending RpcAgent::pending_call(int32_t dst, std::string what, Milliseconds timeout) {
  Pending p;
  p.future = make_future();
  p.dst = dst;
  p.what = std::move(what);
  p.timeout = timeout;
  p.deadline = Clock::now() + timeout;
  return p;
}

std::shared_ptr<ValueFuture> RpcAgent::call(int32_t dst, const std::string& function, ValueList args,
                                            Milliseconds timeout) {
  worker(dst);  // a clear error for an unknown id
  if (timeout.count() <= 0) timeout = options_.rpc_timeout;
  auto m = request(MessageType::Call, dst, Value(ValueList{Value(function), Value(std::move(args))}), next_msg_id(),
                   /*in_context=*/true);
  Pending p = pending_call(dst, function, timeout);
  auto fut = p.future;
  send_request(dst, m, std::move(p));
  return fut;
}

RRef RpcAgent::remote(int32_t dst, const std::string& function, ValueList args, Milliseconds timeout) {
  worker(dst);
  if (timeout.count() <= 0) timeout = options_.rpc_timeout;
  int64_t rref_id = -1, fork_id = -1;
  RRef rref = rrefs_->create_user_for_remote(dst, &rref_id, &fork_id);
  auto m = request(MessageType::RemoteCall, dst,
                   Value(ValueList{Value(function), Value(std::move(args)), Value(rref_id), Value(fork_id)}),
                   next_msg_id(), /*in_context=*/true);
  Pending p = pending_call(dst, function, timeout);
  // The owner's answer confirms the creator's fork, whatever the function did.
  std::weak_ptr<RRefContext> ctx = rrefs_;
  p.future->add_done_callback([ctx, fork_id](ValueFuture&) {
    if (auto c = ctx.lock()) c->confirm_remote_user(fork_id);
  });
  send_request(dst, m, std::move(p));
  return rref;
}

std::shared_ptr<ValueFuture> RpcAgent::fetch(const RRefImpl& rref, Milliseconds timeout) {
  if (timeout.count() <= 0) timeout = options_.rpc_timeout;
  auto m = request(MessageType::RRefFetch, rref.owner, Value(int_list({rref.rref_id})), next_msg_id(),
                   /*in_context=*/true);
  Pending p = pending_call(rref.owner, "to_here of RRef " + wire::format_id(rref.rref_id), timeout);
  auto fut = p.future;
  send_request(rref.owner, m, std::move(p));
  return fut;
}

}  // namespace ddpscope::rpc
