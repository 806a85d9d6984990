#include "rpc_agent.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <zmq_addon.hpp>

#include "autograd_hooks.h"
#include "function_registry.h"
#include "listen_address.h"
#include "probe.h"
#include "records.h"
#include "ddpscope/env.h"

namespace ddpscope::rpc {
namespace {

using wire::MessageType;
// The run file names RPC messages by the wire's type codes.
static_assert(static_cast<int>(MessageType::Call) == static_cast<int>(probes::RpcMessageKind::Call) &&
              static_cast<int>(MessageType::Ack) == static_cast<int>(probes::RpcMessageKind::Ack) &&
              static_cast<int>(MessageType::RRefChildAccept) ==
                  static_cast<int>(probes::RpcMessageKind::RRefChildAccept));
constexpr size_t kGatherBytes = 256;  // names, hosts and endpoints exchanged at start
// A quick call whose message is at most this large runs on the receive thread.
constexpr size_t kInlineCallBytes = 64 * 1024;
// Rejected messages marked on the timeline; later ones are only counted.
constexpr uint64_t kRejectionsMarked = 100;
// Worker 0's function that counts graceful-shutdown votes (shutdown_tally.h).
constexpr const char* kShutdownVote = "_ddpscope.shutdown_vote";

// Every rank's `mine` (at most kGatherBytes bytes), through the process group.
std::vector<std::string> allgather_strings(c10d::ProcessGroup& group, const std::string& mine,
                                           const char* what) {
  DDPSCOPE_CHECK(mine.size() < kGatherBytes, "init_rpc: the ", what, " '", mine, "' is longer than ",
                 kGatherBytes - 1, " bytes");
  constexpr int64_t kWords = kGatherBytes / 8;
  Tensor in = Tensor::zeros({kWords}, DType::I64);
  std::memcpy(in.raw_data(), mine.data(), mine.size());
  std::vector<Tensor> out;
  for (int r = 0; r < group.size(); ++r)
    out.push_back(Tensor::zeros({kWords}, DType::I64));
  group.allgather(out, in)->wait();
  std::vector<std::string> result;
  for (const auto& t : out) {
    const char* p = static_cast<const char*>(t.raw_data());
    result.emplace_back(p, strnlen(p, kGatherBytes));
  }
  return result;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

std::string random_token() {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string t;
  for (int i = 0; i < 32; ++i)
    t.push_back(hex[rd() % 16]);
  return t;
}

void record_message(probes::Kind kind, const std::string& name, int64_t t_begin_ticks,
                    int32_t peer, size_t bytes, const wire::Header& h) {
  if (!probes::enabled()) return;
  probes::EventArgs args;
  args.peer = static_cast<int16_t>(peer);
  args.bytes = static_cast<int64_t>(bytes);
  args.id = h.ctx_id;
  args.id2 = static_cast<int64_t>(h.msg_id);
  args.param = h.type;
  probes::record(kind, probes::intern(name, __FILE__, __LINE__), t_begin_ticks,
                 probes::now_ticks(), args, probes::kTimesInTicks);
}

// A pending call's `what` in a sentence: "call of 'add'", "to_here of RRef 1:7".
std::string describe_call(const std::string& what) {
  return what.find(' ') == std::string::npos ? "call of '" + what + "'" : what;
}

ValueList int_list(const std::vector<int64_t>& ids) {
  ValueList l;
  for (int64_t i : ids)
    l.emplace_back(i);
  return l;
}

}  // namespace

// ---------------------------------------------------------------- start and stop

RpcAgent::RpcAgent(RpcBackendOptions options, std::shared_ptr<c10d::ProcessGroup> group)
    : options_(std::move(options)), group_(std::move(group)), zmq_(1), router_(zmq_, zmq::socket_type::router) {}

std::shared_ptr<RpcAgent> RpcAgent::create(const std::string& name, RpcBackendOptions options,
                                           std::shared_ptr<c10d::ProcessGroup> group) {
  DDPSCOPE_CHECK(group != nullptr, "init_rpc: no process group");
  std::shared_ptr<RpcAgent> agent(new RpcAgent(std::move(options), std::move(group)));
  agent->start(name);
  return agent;
}

void RpcAgent::start(const std::string& requested_name) {
  auto& g = *group_;
  self_ = g.rank();
  options_.rpc_timeout = Milliseconds(env_int("DDPSCOPE_RPC_TIMEOUT_MS", options_.rpc_timeout.count(), 1));
  DDPSCOPE_CHECK(options_.rpc_timeout.count() > 0, "init_rpc: rpc_timeout must be positive");
  DDPSCOPE_CHECK(options_.num_worker_threads >= 1 && options_.max_worker_threads >= options_.num_worker_threads,
                 "init_rpc: need 1 <= num_worker_threads (", options_.num_worker_threads,
                 ") <= max_worker_threads (", options_.max_worker_threads, ")");
  const std::string name = requested_name.empty() ? "worker" + std::to_string(self_) : requested_name;

  // Listen where the others reach us, and nowhere else.
  const auto hosts = allgather_strings(g, host_name(), "host name");
  const bool one_host = std::set<std::string>(hosts.begin(), hosts.end()).size() == 1;
  std::string address = options_.listen_address;
  if (address.empty()) {
    if (one_host) {
      address = "127.0.0.1";
    } else if (const char* env = std::getenv("DDPSCOPE_RPC_ADDRESS"); env && *env) {
      address = env;
    } else {
      // The interface this host's route to another of the job's hosts leaves from: the
      // job's network, not whichever interface happens to be listed first.
      for (const std::string& h : hosts) {
        if (h != hosts[self_]) {
          address = local_address_towards(h);
          break;
        }
      }
      if (address.empty() || address.rfind("127.", 0) == 0) address = first_external_ipv4();
    }
  }
  std::string bind_error;
  if (address.empty()) bind_error = "no non-loopback IPv4 address found; set DDPSCOPE_RPC_ADDRESS";
  if (bind_error.empty()) {
    router_.set(zmq::sockopt::linger, 0);
    router_.set(zmq::sockopt::maxmsgsize, options_.max_frame_bytes);
    router_.set(zmq::sockopt::rcvhwm, 0);
    try {
      router_.bind("tcp://" + address + ":0");
      endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
      bind_error = detail::concat("cannot listen on ", address, ": ", e.what(),
                                  " (set DDPSCOPE_RPC_ADDRESS to an address of this host)");
    }
  }
  // Every rank reaches this point even when its bind failed, so none waits forever.
  const auto endpoints = allgather_strings(g, bind_error.empty() ? endpoint_ : "!" + bind_error, "endpoint");
  for (int r = 0; r < g.size(); ++r) {
    DDPSCOPE_CHECK(endpoints[r].empty() || endpoints[r][0] != '!', "init_rpc: rank ", r,
                   " could not start its RPC agent: ", endpoints[r].substr(1));
  }
  const auto names = allgather_strings(g, name, "worker name");
  std::set<std::string> seen;
  for (int r = 0; r < g.size(); ++r) {
    DDPSCOPE_CHECK(seen.insert(names[r]).second, "init_rpc: two workers are named '", names[r],
                   "' (one is rank ", r, "); give each worker its own name");
    workers_.push_back({names[r], r});
  }
  endpoints_ = endpoints;
  // The token: the launcher's, or worker 0's own, shared with all.
  token_ = options_.token;
  if (token_.empty()) {
    const char* env = std::getenv("DDPSCOPE_RUN_TOKEN");
    token_ = env && *env ? env : random_token();
  }
  token_ = allgather_strings(g, token_, "token")[0];

  for (int r = 0; r < g.size(); ++r) {
    auto peer = std::make_unique<Peer>();
    peer->dealer = std::make_unique<zmq::socket_t>(zmq_, zmq::socket_type::dealer);
    peer->dealer->set(zmq::sockopt::linger, 0);
    peer->dealer->set(zmq::sockopt::sndhwm, 0);  // calls queue; their timeouts bound them
    const std::string monitor_endpoint = "inproc://rpc-monitor-" + std::to_string(r);
    DDPSCOPE_CHECK(zmq_socket_monitor(peer->dealer->handle(), monitor_endpoint.c_str(),
                                      ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) == 0,
                   "init_rpc: cannot monitor the connection to worker ", r, ": ", zmq_strerror(zmq_errno()));
    peer->monitor = std::make_unique<zmq::socket_t>(zmq_, zmq::socket_type::pair);
    peer->monitor->set(zmq::sockopt::linger, 0);
    peer->monitor->connect(monitor_endpoint);
    peer->dealer->connect(endpoints[r]);
    peers_.push_back(std::move(peer));
  }
  pool_ = std::make_unique<ThreadPool>(options_.num_worker_threads, options_.max_worker_threads);
  std::weak_ptr<RpcAgent> weak = weak_from_this();
  shutdown_tally_ = std::make_unique<ShutdownTally>(g.size());
  register_function(kShutdownVote, [weak](const ValueList& a) -> Value {
    auto agent = weak.lock();
    DDPSCOPE_CHECK(agent != nullptr, "shutdown vote: the RPC agent is gone");
    return Value(agent->shutdown_tally_->vote(a.at(0).to_int(), static_cast<int32_t>(a.at(1).to_int()),
                                              a.at(2).to_int(), agent->options_.rpc_timeout));
  });
  rrefs_ = std::make_shared<RRefContext>(
      self_, [weak](int32_t dst, MessageType type, std::vector<int64_t> ids, std::function<void()> on_ack) {
        if (auto agent = weak.lock()) agent->send_control(dst, type, std::move(ids), std::move(on_ack));
      });
  running_ = true;
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
    for (int64_t round = 0;; ++round) {
      wait_until_quiet(deadline);
      size_t busy;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        busy = pending_.size() + rrefs_->pending();
      }
      int64_t total = 0;
      try {
        total = call(0, kShutdownVote,
                     ValueList{Value(round), Value(int64_t{self_}), Value(static_cast<int64_t>(busy))},
                     options_.rpc_timeout)
                    ->wait()
                    .to_int();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rpc: worker %d: graceful shutdown could not agree with the others (%s); "
                             "stopping anyway\n", self_, e.what());
        break;
      }
      if (total == 0) break;
      if (Clock::now() >= deadline) {
        std::fprintf(stderr, "rpc: worker %d: shutdown went on after %lld ms with %lld messages "
                             "still unanswered across the job\n",
                     self_, static_cast<long long>(options_.rpc_timeout.count()),
                     static_cast<long long>(total));
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
          "the RPC agent of ", self().name, " shut down before ", worker_label(p.dst),
          " answered the ", p.what))));
    }
  }
  for (auto& p : peers_) {
    zmq_socket_monitor(p->dealer->handle(), nullptr, 0);
    p->monitor->close();
    p->dealer->close();
  }
  router_.close();
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
  for (const auto& w : workers_)
    if (w.name == name) return w;
  std::string known;
  for (const auto& w : workers_)
    known += (known.empty() ? "" : ", ") + w.name;
  throw RpcError(detail::concat("unknown worker '", name, "'; the workers are ", known));
}

const WorkerInfo& RpcAgent::worker(int32_t id) const {
  if (id < 0 || id >= static_cast<int32_t>(workers_.size())) {
    throw RpcError(detail::concat("unknown worker id ", id, "; ids run from 0 to ", workers_.size() - 1));
  }
  return workers_[static_cast<size_t>(id)];
}

std::string RpcAgent::worker_label(int32_t id) const {
  if (id < 0 || id >= static_cast<int32_t>(workers_.size())) return detail::concat("worker id ", id);
  return detail::concat(workers_[static_cast<size_t>(id)].name, " (id ", id, ")");
}

AgentStats RpcAgent::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

// ---------------------------------------------------------------- sending

uint64_t RpcAgent::next_msg_id() {
  return static_cast<uint64_t>(wire::make_global_id(self_, next_msg_.fetch_add(1)));
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

std::shared_ptr<OutgoingMessage> RpcAgent::request(MessageType type, int32_t dst, Value body,
                                                    uint64_t msg_id, bool in_context) {
  auto m = std::make_shared<OutgoingMessage>();
  m->header.type = static_cast<uint8_t>(type);
  m->header.src = self_;
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
  Peer& peer = *peers_.at(static_cast<size_t>(dst));
  {
    std::lock_guard<std::mutex> lock(peer.mutex);
    DDPSCOPE_CHECK(peer.dealer->handle() != nullptr, "the RPC agent of ", self().name, " is shut down");
    const auto more = zmq::send_flags::sndmore;
    peer.dealer->send(zmq::buffer(token_), more);
    peer.dealer->send(zmq::buffer(&m.header, sizeof(m.header)), more);
    peer.dealer->send(zmq::buffer(m.body), m.tensors.empty() ? zmq::send_flags::none : more);
    for (size_t k = 0; k < m.tensors.size(); ++k) {
      const Tensor& t = m.tensors[k];
      // A reply's tensor may still be written by its owner: alias only what nothing else holds.
      zmq::message_t frame = tensor_frame(t, may_alias || t.is_sole_owner_of_storage());
      peer.dealer->send(frame, k + 1 < m.tensors.size() ? more : zmq::send_flags::none);
    }
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

void RpcAgent::send_control(int32_t dst, MessageType type, std::vector<int64_t> ids,
                            std::function<void()> on_ack) {
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
    std::fprintf(stderr, "rpc: %s could not send %s to %s: %s\n", self().name.c_str(),
                 wire::message_type_name(type), worker_label(dst).c_str(), e.what());
  }
}

void RpcAgent::reply(const wire::Header& req, MessageType type, Value body, const std::string& name) {
  auto m = std::make_shared<OutgoingMessage>();
  m->header.type = static_cast<uint8_t>(type);
  m->header.src = self_;
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
          Value(relayed ? message : detail::concat("Error on worker ", self_, " (", self().name, "): ", message)),
          name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rpc: %s could not report an error to %s: %s\n", self().name.c_str(),
                 worker_label(req.src).c_str(), e.what());
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
  auto m = request(MessageType::Call, dst, Value(ValueList{Value(function), Value(std::move(args))}),
                   next_msg_id(), /*in_context=*/true);
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

// ---------------------------------------------------------------- receiving

void RpcAgent::receive_loop() {
  while (!stop_receiving_.load()) {
    const auto now = Clock::now();
    const auto wake = next_wakeup(now);
    const auto wait = std::chrono::duration_cast<Milliseconds>(wake - now);
    poll_items_.resize(1 + peers_.size());
    poll_items_[0] = {router_.handle(), 0, ZMQ_POLLIN, 0};
    for (size_t k = 0; k < peers_.size(); ++k)
      poll_items_[k + 1] = {peers_[k]->monitor->handle(), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(poll_items_.data(), poll_items_.size(), std::clamp(wait, Milliseconds(0), Milliseconds(50)));
    } catch (const zmq::error_t&) {
      continue;  // EINTR
    }
    for (size_t k = 0; k < peers_.size(); ++k) {
      if (poll_items_[k + 1].revents & ZMQ_POLLIN) read_monitor(static_cast<int32_t>(k));
    }
    const zmq::pollitem_t item = poll_items_[0];
    // Read what is there, a bounded batch, then look at the timers.
    for (int n = 0; n < 64 && (item.revents & ZMQ_POLLIN); ++n) {
      Received r;
      zmq::message_t identity;
      if (!router_.recv(identity, zmq::recv_flags::dontwait)) break;
      r.t_begin_ticks = probes::enabled() ? probes::now_ticks() : 0;
      bool more = router_.get(zmq::sockopt::rcvmore);
      size_t frames = 0;
      while (more) {
        auto part = std::make_shared<zmq::message_t>();
        if (!router_.recv(*part, zmq::recv_flags::none)) break;
        more = part->more();
        // Frames past what any message can have are read and dropped, never kept.
        if (++frames <= wire::kMaxTensors + 3) r.frames.push_back(std::move(part));
      }
      if (frames > wire::kMaxTensors + 3) {
        reject(wire::Rejection::Malformed, detail::concat("message of ", frames, " frames"));
        continue;
      }
      handle(std::move(r));
    }
    const auto after = Clock::now();
    for (size_t k = 0; k < delayed_.size();) {
      if (delayed_[k].due <= after) {
        Received r = std::move(delayed_[k]);
        delayed_.erase(delayed_.begin() + static_cast<long>(k));
        r.due = Clock::time_point::max();  // marks it as handled once: no second delay
        handle(std::move(r));
      } else {
        ++k;
      }
    }
    expire(after);
  }
}

void RpcAgent::read_monitor(int32_t id) {
  Peer& peer = *peers_[static_cast<size_t>(id)];
  for (;;) {
    // An event is two frames: 2 bytes of event and 4 of value, then the endpoint.
    zmq::message_t event, address;
    if (!peer.monitor->recv(event, zmq::recv_flags::dontwait)) return;
    if (event.more()) (void)peer.monitor->recv(address, zmq::recv_flags::none);
    if (event.size() < sizeof(uint16_t)) continue;
    uint16_t code = 0;
    std::memcpy(&code, event.data(), sizeof(code));
    if (code == ZMQ_EVENT_CONNECTED) {
      peer.lost = false;
    } else if (code == ZMQ_EVENT_DISCONNECTED && running_.load()) {
      peer.lost_at_ms = std::chrono::duration_cast<Milliseconds>(Clock::now().time_since_epoch()).count();
      peer.lost = true;
      fail_calls_to(id);
      if (auto hooks = autograd_hooks()) hooks->on_worker_lost(id);
    }
  }
}

void RpcAgent::fail_calls_to(int32_t id) {
  std::vector<Pending> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.dst == id && it->second.future) {
        failed.push_back(std::move(it->second));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!failed.empty()) quiet_cv_.notify_all();
  const auto now = Clock::now();
  for (auto& p : failed) {
    const auto waited = std::chrono::duration_cast<Milliseconds>(now - (p.deadline - p.timeout)).count();
    p.future->set_error(std::make_exception_ptr(RpcError(detail::concat(
        "the connection to ", worker_label(id), " broke after ", waited, " ms of waiting for the ",
        describe_call(p.what), ": the worker died or shut down its RPC agent"))));
  }
}

void RpcAgent::check_reachable(int32_t dst, const std::string& what) const {
  const Peer& peer = *peers_.at(static_cast<size_t>(dst));
  if (!peer.lost.load()) return;
  const auto ago = std::chrono::duration_cast<Milliseconds>(Clock::now().time_since_epoch()).count() -
                   peer.lost_at_ms.load();
  throw RpcError(detail::concat("cannot send the ", what, " to ", worker_label(dst), ": its connection broke ",
                                ago, " ms ago (the worker died or shut down its RPC agent)"));
}

RpcAgent::Clock::time_point RpcAgent::next_wakeup(Clock::time_point now) {
  auto wake = now + Milliseconds(50);
  for (const auto& r : delayed_)
    wake = std::min(wake, r.due);
  return wake;
}

void RpcAgent::reject(wire::Rejection why, const std::string& what) {
  uint64_t total;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (why == wire::Rejection::Token) {
      ++stats_.rejected_token;
    } else {
      ++stats_.rejected_malformed;
    }
    stats_.last_rejection = what;
    total = stats_.rejected_token + stats_.rejected_malformed;
  }
  // The first rejections are marked on the timeline (a flood of junk must not flood the
  // run file); the totals go into its metrics at shutdown.
  if (probes::enabled() && total <= kRejectionsMarked) {
    const bool token = why == wire::Rejection::Token;
    static const auto* no_token = probes::intern("rpc: rejected a message without the job's token", __FILE__, __LINE__);
    static const auto* malformed = probes::intern("rpc: rejected a malformed message", __FILE__, __LINE__);
    const int64_t now = probes::now_ticks();
    probes::record(probes::Kind::Mark, token ? no_token : malformed, now, now, {}, probes::kTimesInTicks);
  }
}

void RpcAgent::record_stats() const {
  if (!probes::enabled()) return;
  const AgentStats s = stats();
  const std::pair<const char*, uint64_t> metrics[] = {
      {"rpc.messages_sent", s.messages_sent},     {"rpc.messages_received", s.messages_received},
      {"rpc.calls_served", s.calls_served},       {"rpc.rejected_token", s.rejected_token},
      {"rpc.rejected_malformed", s.rejected_malformed}, {"rpc.late_replies", s.late_replies},
      {"rpc.control_retries", s.control_retries}};
  for (const auto& [name, value] : metrics)
    probes::record_metric(-1, name, static_cast<double>(value));
}

Value RpcAgent::decode_body(const wire::WireValue& body, const Received& r) {
  return decode_value(body, {r.frames.begin() + 3, r.frames.end()},
                      [this](const wire::RRefMeta& meta) { return rrefs_->from_wire(meta); });
}

void RpcAgent::handle(Received r) {
  wire::DecodedMessage m;
  try {
    std::vector<wire::FrameView> views;
    views.reserve(r.frames.size());
    for (const auto& f : r.frames)
      views.push_back({static_cast<const uint8_t*>(f->data()), f->size()});
    m = wire::decode_message(views, token_);
    const auto n = static_cast<int32_t>(workers_.size());
    if (m.header.dst != self_ || m.header.src >= n) {
      throw wire::WireError(wire::Rejection::Malformed,
                            detail::concat("message from worker ", m.header.src, " to worker ",
                                           m.header.dst, " reached worker ", self_));
    }
  } catch (const wire::WireError& e) {
    reject(e.rejection(), e.message());
    return;
  }
  const auto type = static_cast<MessageType>(m.header.type);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.messages_received;
    if (r.due != Clock::time_point::max()) {
      auto inj = injections_.find(m.header.type);
      if (inj != injections_.end() && inj->second.drop_count > 0) {
        --inj->second.drop_count;
        return;
      }
      if (inj != injections_.end() && inj->second.delay_count > 0) {
        --inj->second.delay_count;
        r.due = Clock::now() + inj->second.delay;
        delayed_.push_back(std::move(r));
        return;
      }
    }
  }
  try {
    switch (type) {
      case MessageType::Response:
      case MessageType::Error:
      case MessageType::Ack:
        handle_reply(m, r);
        return;
      case MessageType::Call:
        serve_call(std::move(m), std::move(r));
        return;
      case MessageType::RemoteCall:
        serve_remote_call(std::move(m), std::move(r));
        return;
      case MessageType::RRefFetch: {
        record_message(probes::Kind::RpcRecv, "rref_fetch", r.t_begin_ticks, m.header.src, 0, m.header);
        auto owner = rrefs_->owner_rref(m.body.list[0].i);
        // Answered when the value exists: a fetch may arrive before the value is made.
        answer_when_done(owner->value, m.header, "rref_fetch", /*count_served=*/false);
        return;
      }
      case MessageType::RRefUserDelete:
      case MessageType::RRefForkRequest:
      case MessageType::RRefChildAccept: {
        const auto& ids = m.body.list;
        record_message(probes::Kind::RpcRecv, wire::message_type_name(type), r.t_begin_ticks,
                       m.header.src, 0, m.header);
        if (type == MessageType::RRefUserDelete) rrefs_->on_user_delete(ids[0].i, ids[1].i);
        if (type == MessageType::RRefForkRequest) rrefs_->on_fork_request(ids[0].i, ids[1].i);
        if (type == MessageType::RRefChildAccept) rrefs_->on_child_accept(ids[0].i);
        reply(m.header, MessageType::Ack, Value(), wire::message_type_name(MessageType::Ack));
        return;
      }
    }
  } catch (const std::exception& e) {
    // A message that decoded but could not be acted on (a send failing at shutdown).
    std::fprintf(stderr, "rpc: %s could not handle a %s from %s: %s\n", self().name.c_str(),
                 wire::message_type_name(type), worker_label(m.header.src).c_str(), e.what());
  }
}

void RpcAgent::handle_reply(const wire::DecodedMessage& m, Received& r) {
  Pending p;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(m.header.msg_id);
    if (it == pending_.end()) {
      ++stats_.late_replies;
      return;
    }
    p = std::move(it->second);
    pending_.erase(it);
  }
  quiet_cv_.notify_all();
  size_t bytes = 0;
  for (const auto& f : r.frames)
    bytes += f->size();
  record_message(probes::Kind::RpcRecv, p.what, r.t_begin_ticks, m.header.src, bytes, m.header);
  const auto type = static_cast<MessageType>(m.header.type);
  if (type == MessageType::Ack) {
    if (p.on_ack) p.on_ack();
    return;
  }
  if (!p.future) return;
  if (type == MessageType::Error) {
    p.future->set_error(std::make_exception_ptr(RpcError(m.body.s)));
    return;
  }
  try {
    Value result = decode_body(m.body, r);
    received_in_context(m.header, result);
    p.future->try_mark_completed(std::move(result));
  } catch (...) {
    p.future->set_error(std::current_exception());
  }
}

void RpcAgent::serve_call(wire::DecodedMessage m, Received r) {
  const std::string function = m.body.list[0].s;
  size_t bytes = 0;
  for (const auto& f : r.frames)
    bytes += f->size();
  record_message(probes::Kind::RpcRecv, function, r.t_begin_ticks, m.header.src, bytes, m.header);
  Value args_value = decode_body(m.body.list[1], r);
  received_in_context(m.header, args_value);
  ValueList args = args_value.list();
  args_value = Value();
  const wire::Header h = m.header;
  auto fn = find_function(function);
  auto run = [this, h, function, fn, args = std::move(args)]() mutable {
    const auto context = enter_context(h);
    DDPSCOPE_SPAN_DYNAMIC(span, probes::Kind::RpcCall, function);
    span.args().peer = static_cast<int16_t>(h.src);
    span.args().id2 = static_cast<int64_t>(h.msg_id);
    if (!fn) {
      reply_error(h, detail::concat("unknown function '", function, "'; register it with "
                                    "rpc::register_function on every worker"), function);
      return;
    }
    Value result;
    std::shared_ptr<ValueFuture> later;
    try {
      if (fn->async_fn) {
        later = fn->async_fn(args);
      } else {
        result = (*fn)(args);
      }
      args.clear();
    } catch (const Error& e) {
      reply_error(h, e.message(), function);
      return;
    } catch (const std::exception& e) {
      reply_error(h, e.what(), function);
      return;
    }
    span.end();
    if (later) {
      answer_when_done(later, h, function, /*count_served=*/true);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.calls_served;
    }
    try {
      reply(h, MessageType::Response, std::move(result), function);
    } catch (const std::exception& e) {
      reply_error(h, detail::concat("could not send the result: ", e.what()), function);
    }
  };
  // A quick function with small arguments (and an unknown name's error) is answered
  // here; anything that may block or take long goes to the pool (function_registry.h).
  if (!fn || (fn->options.quick && bytes <= kInlineCallBytes)) {
    run();
  } else {
    pool_->submit(std::move(run));
  }
}

void RpcAgent::answer_when_done(const std::shared_ptr<ValueFuture>& result, const wire::Header& h,
                                const std::string& name, bool count_served) {
  std::weak_ptr<RpcAgent> weak = weak_from_this();
  result->add_done_callback([weak, h, name, count_served](ValueFuture& f) {
    auto agent = weak.lock();
    if (!agent || !agent->running()) return;
    if (auto e = f.error()) {
      try {
        std::rethrow_exception(e);
      } catch (const Error& err) {
        agent->reply_error(h, err.message(), name);
      } catch (const std::exception& err) {
        agent->reply_error(h, err.what(), name);
      }
      return;
    }
    if (count_served) {
      std::lock_guard<std::mutex> lock(agent->mutex_);
      ++agent->stats_.calls_served;
    }
    try {
      agent->reply(h, MessageType::Response, f.value(), name);
    } catch (const std::exception& err) {
      agent->reply_error(h, detail::concat("could not send the result: ", err.what()), name);
    }
  });
}

void RpcAgent::serve_remote_call(wire::DecodedMessage m, Received r) {
  const std::string function = m.body.list[0].s;
  record_message(probes::Kind::RpcRecv, function, r.t_begin_ticks, m.header.src, 0, m.header);
  Value args_value = decode_body(m.body.list[1], r);
  received_in_context(m.header, args_value);
  ValueList args = args_value.list();
  args_value = Value();
  auto owner = rrefs_->on_remote_call(m.body.list[2].i, m.body.list[3].i);
  const wire::Header h = m.header;
  pool_->submit([this, h, function, owner, args = std::move(args)]() mutable {
    const auto context = enter_context(h);
    DDPSCOPE_SPAN_DYNAMIC(span, probes::Kind::RpcCall, function);
    span.args().peer = static_cast<int16_t>(h.src);
    span.args().id2 = static_cast<int64_t>(h.msg_id);
    std::string error;
    auto fn = find_function(function);
    if (!fn) {
      error = detail::concat("unknown function '", function,
                             "'; register it with rpc::register_function on every worker");
    } else if (fn->async_fn) {
      error = detail::concat("'", function, "' answers asynchronously; call it with rpc_sync or rpc_async, "
                             "not remote()");
    } else {
      try {
        owner->value->try_mark_completed((*fn)(args));
      } catch (const Error& e) {
        error = e.message();
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    args.clear();
    span.end();
    if (!error.empty()) {
      const std::string full = detail::concat("Error on worker ", self_, " (", self().name, "): ", error);
      owner->value->set_error(std::make_exception_ptr(RpcError(full)));
      reply(h, MessageType::Error, Value(full), function);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.calls_served;
    }
    reply(h, MessageType::Response, Value(), function);
  });
}

void RpcAgent::received_in_context(const wire::Header& h, Value& value) {
  if (h.ctx_id < 0) return;
  if (auto hooks = autograd_hooks())
    hooks->on_receive(h.ctx_id, h.src, autograd_message_id(h), (h.flags & wire::kFlagAutograd) != 0, value);
}

std::shared_ptr<void> RpcAgent::enter_context(const wire::Header& h) {
  if (h.ctx_id < 0) return nullptr;
  auto hooks = autograd_hooks();
  return hooks ? hooks->enter(h.ctx_id) : nullptr;
}

void RpcAgent::expire(Clock::time_point now) {
  std::vector<Pending> timed_out;
  std::vector<std::pair<int32_t, std::shared_ptr<OutgoingMessage>>> resend;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      Pending& p = it->second;
      if (now >= p.deadline) {
        timed_out.push_back(std::move(p));
        it = pending_.erase(it);
        continue;
      }
      if (p.resend && now >= p.next_retry) {
        resend.emplace_back(p.dst, p.resend);
        p.next_retry = now + options_.control_retry_interval;
        ++stats_.control_retries;
      }
      ++it;
    }
  }
  if (!timed_out.empty()) quiet_cv_.notify_all();
  for (auto& [dst, m] : resend) {
    try {
      send(dst, *m, wire::message_type_name(static_cast<MessageType>(m->header.type)), true);
    } catch (const std::exception&) {
    }
  }
  for (auto& p : timed_out) {
    const std::string msg = detail::concat(
        "RPC timed out: ", p.resend ? "the RRef message " : "the call of '", p.what,
        p.resend ? "" : "'", " to ", worker_label(p.dst), " got no answer within ",
        p.timeout.count(), " ms (is ", workers_[static_cast<size_t>(p.dst)].name,
        " alive and serving? raise the timeout with rpc_timeout or DDPSCOPE_RPC_TIMEOUT_MS)");
    if (p.future) {
      p.future->set_error(std::make_exception_ptr(RpcError(msg)));
    } else {
      std::fprintf(stderr, "rpc: %s: %s\n", self().name.c_str(), msg.c_str());
    }
  }
}

void RpcAgent::inject_delay(MessageType type, Milliseconds delay, int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& inj = injections_[static_cast<uint8_t>(type)];
  inj.delay = delay;
  inj.delay_count = count;
}

void RpcAgent::inject_drop(MessageType type, int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  injections_[static_cast<uint8_t>(type)].drop_count = count;
}

}  // namespace ddpscope::rpc
