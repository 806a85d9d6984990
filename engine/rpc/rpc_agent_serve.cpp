// RpcAgent's receiving half: the receive loop, replies, serving calls, timeouts.
#include <cstdio>

#include "agent_internal.h"
#include "ddpscope/log.h"
#include "autograd_hooks.h"
#include "rpc_agent.h"

namespace ddpscope::rpc {

using wire::MessageType;
using namespace agent_internal;

// ---------------------------------------------------------------- receiving

void RpcAgent::receive_loop() {
  while (!stop_receiving_.load()) {
    // Timeouts and retries are looked at after every batch, and at least every 50 ms.
    transport_->poll(Milliseconds(50), *this);
    expire(Clock::now());
  }
}

void RpcAgent::on_message(IncomingMessage message) { handle(std::move(message)); }

void RpcAgent::on_peer_connected(int32_t id) { peer_state_.at(static_cast<size_t>(id))->lost = false; }

void RpcAgent::on_peer_lost(int32_t id) {
  if (!running_.load()) return;
  PeerState& peer = *peer_state_.at(static_cast<size_t>(id));
  peer.lost_at_ms = std::chrono::duration_cast<Milliseconds>(Clock::now().time_since_epoch()).count();
  peer.lost = true;
  fail_calls_to(id);
  if (auto hooks = autograd_hooks()) hooks->on_worker_lost(id);
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
    p.future->set_error(std::make_exception_ptr(RpcError(
        detail::concat("the connection to ", worker_label(id), " broke after ", waited, " ms of waiting for the ",
                       describe_call(p.what), ": the worker died or shut down its RPC agent"))));
  }
}

void RpcAgent::check_reachable(int32_t dst, const std::string& what) const {
  const PeerState& peer = *peer_state_.at(static_cast<size_t>(dst));
  if (!peer.lost.load()) return;
  const auto ago =
      std::chrono::duration_cast<Milliseconds>(Clock::now().time_since_epoch()).count() - peer.lost_at_ms.load();
  throw RpcError(detail::concat("cannot send the ", what, " to ", worker_label(dst), ": its connection broke ", ago,
                                " ms ago (the worker died or shut down its RPC agent)"));
}

void RpcAgent::on_rejected(wire::Rejection why, const std::string& what) {
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
  const std::pair<const char*, uint64_t> metrics[] = {{"rpc.messages_sent", s.messages_sent},
                                                      {"rpc.messages_received", s.messages_received},
                                                      {"rpc.calls_served", s.calls_served},
                                                      {"rpc.rejected_token", s.rejected_token},
                                                      {"rpc.rejected_malformed", s.rejected_malformed},
                                                      {"rpc.late_replies", s.late_replies},
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
      views.push_back({f.data, f.size});
    m = wire::decode_message(views, setup_.token);
    const auto n = static_cast<int32_t>(setup_.workers.size());
    if (m.header.dst != setup_.self || m.header.src >= n) {
      throw wire::WireError(wire::Rejection::Malformed,
                            detail::concat("message from worker ", m.header.src, " to worker ", m.header.dst,
                                           " reached worker ", setup_.self));
    }
  } catch (const wire::WireError& e) {
    on_rejected(e.rejection(), e.message());
    return;
  }
  const auto type = static_cast<MessageType>(m.header.type);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.messages_received;
  }
  try {
    switch (type) {
      case MessageType::Response:
      case MessageType::Error:
      case MessageType::Ack: handle_reply(m, r); return;
      case MessageType::Call: serve_call(std::move(m), std::move(r)); return;
      case MessageType::RemoteCall: serve_remote_call(std::move(m), std::move(r)); return;
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
        record_message(probes::Kind::RpcRecv, wire::message_type_name(type), r.t_begin_ticks, m.header.src, 0,
                       m.header);
        if (type == MessageType::RRefUserDelete) rrefs_->on_user_delete(ids[0].i, ids[1].i);
        if (type == MessageType::RRefForkRequest) rrefs_->on_fork_request(ids[0].i, ids[1].i);
        if (type == MessageType::RRefChildAccept) rrefs_->on_child_accept(ids[0].i);
        reply(m.header, MessageType::Ack, Value(), wire::message_type_name(MessageType::Ack));
        return;
      }
    }
  } catch (const std::exception& e) {
    // A message that decoded but could not be acted on (a send failing at shutdown).
    log::warn("rpc: {} could not handle a {} from {}: {}", self().name, wire::message_type_name(type),
              worker_label(m.header.src), e.what());
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
    bytes += f.size;
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
    bytes += f.size;
  record_message(probes::Kind::RpcRecv, function, r.t_begin_ticks, m.header.src, bytes, m.header);
  Value args_value = decode_body(m.body.list[1], r);
  received_in_context(m.header, args_value);
  ValueList args = args_value.list();
  args_value = Value();
  const wire::Header h = m.header;
  auto fn = function == kShutdownVote ? shutdown_vote_fn_ : function == kAlive ? alive_fn_ : find_function(function);
  auto run = [this, h, function, fn, args = std::move(args)]() mutable {
    const auto context = enter_context(h);
    DDPSCOPE_SPAN_DYNAMIC(span, probes::Kind::RpcCall, function);
    span.args().peer = static_cast<int16_t>(h.src);
    span.args().id2 = static_cast<int64_t>(h.msg_id);
    if (!fn) {
      reply_error(h,
                  detail::concat("unknown function '", function,
                                 "'; register it with "
                                 "rpc::register_function on every worker"),
                  function);
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
  // A quick function with arguments it takes little time over (and an unknown name's
  // error) is answered here; anything that may block or take long goes to the pool
  // (function_registry.h).
  if (!fn || (fn->options.quick && bytes <= fn->options.inline_bytes)) {
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
      error =
          detail::concat("unknown function '", function, "'; register it with rpc::register_function on every worker");
    } else if (fn->async_fn) {
      error = detail::concat("'", function,
                             "' answers asynchronously; call it with rpc_sync or rpc_async, "
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
      const std::string full = detail::concat("Error on worker ", setup_.self, " (", self().name, "): ", error);
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
    const std::string msg =
        detail::concat("RPC timed out: ", p.resend ? "the RRef message " : "the call of '", p.what, p.resend ? "" : "'",
                       " to ", worker_label(p.dst), " got no answer within ", p.timeout.count(), " ms (is ",
                       setup_.workers[static_cast<size_t>(p.dst)].name,
                       " alive and serving? raise the timeout with rpc_timeout or DDPSCOPE_RPC_TIMEOUT_MS)");
    if (p.future) {
      p.future->set_error(std::make_exception_ptr(RpcTimeout(msg)));
    } else {
      log::warn("rpc: {}: {}", self().name, msg);
    }
  }
}

}  // namespace ddpscope::rpc
