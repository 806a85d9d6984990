#include "zmq_transport.h"

#include <algorithm>
#include <cstring>
#include <zmq_addon.hpp>

#include "probe.h"
#include "ddpscope/error.h"

namespace ddpscope::rpc {
namespace {

// Messages read in one poll before the agent gets to look at its timers.
constexpr int kBatch = 64;

}  // namespace

ZmqTransport::ZmqTransport(const std::string& address, int64_t max_frame_bytes)
    : context_(1), gate_(std::make_unique<ZapTokenGate>(context_)), router_(context_, zmq::socket_type::router) {
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::plain_server, 1);
  router_.set(zmq::sockopt::maxmsgsize, max_frame_bytes);
  router_.set(zmq::sockopt::rcvhwm, 0);
  try {
    router_.bind("tcp://" + address + ":0");
  } catch (const zmq::error_t& e) {
    throw Error(detail::concat("cannot listen on ", address, ": ", e.what(),
                               " (set DDPSCOPE_RPC_ADDRESS to an address of this host)"),
                __FILE__, __LINE__);
  }
  endpoint_ = router_.get(zmq::sockopt::last_endpoint);
  const std::string monitor_endpoint = "inproc://rpc-router-monitor";
  DDPSCOPE_CHECK(zmq_socket_monitor(router_.handle(), monitor_endpoint.c_str(),
                                    ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                        ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0,
                 "the ZeroMQ RPC transport cannot watch its handshakes: ", zmq_strerror(zmq_errno()));
  router_monitor_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
  router_monitor_->set(zmq::sockopt::linger, 0);
  router_monitor_->connect(monitor_endpoint);
}

ZmqTransport::~ZmqTransport() { close(); }

void ZmqTransport::expect_token(const std::string& token) {
  token_ = token;
  gate_->set_token(token);
}

void ZmqTransport::connect(const std::vector<std::string>& endpoints) {
  for (size_t r = 0; r < endpoints.size(); ++r) {
    DDPSCOPE_CHECK(endpoints[r].rfind("tcp://", 0) == 0, "init_rpc: worker ", r, " listens on '", endpoints[r],
                   "', another RPC transport's endpoint; give every worker the same DDPSCOPE_RPC_TRANSPORT");
    auto peer = std::make_unique<Peer>();
    peer->dealer = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
    peer->dealer->set(zmq::sockopt::linger, 0);
    peer->dealer->set(zmq::sockopt::sndhwm, 0);  // calls queue; their timeouts bound them
    peer->dealer->set(zmq::sockopt::plain_username, kRpcPlainUser);
    // ZeroMQ refuses an empty password; a transport that expects no token admits any.
    peer->dealer->set(zmq::sockopt::plain_password, token_.empty() ? std::string("-") : token_);
    const std::string monitor_endpoint = "inproc://rpc-monitor-" + std::to_string(r);
    DDPSCOPE_CHECK(zmq_socket_monitor(peer->dealer->handle(), monitor_endpoint.c_str(),
                                      ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) == 0,
                   "init_rpc: cannot monitor the connection to worker ", r, ": ", zmq_strerror(zmq_errno()));
    peer->monitor = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
    peer->monitor->set(zmq::sockopt::linger, 0);
    peer->monitor->connect(monitor_endpoint);
    peer->dealer->connect(endpoints[r]);
    peers_.push_back(std::move(peer));
  }
}

void ZmqTransport::send(int32_t dst, std::vector<OutgoingFrame> frames) {
  Peer& peer = *peers_.at(static_cast<size_t>(dst));
  std::lock_guard<std::mutex> lock(peer.mutex);
  DDPSCOPE_CHECK(!closed_.load() && peer.dealer->handle() != nullptr, "the RPC transport is closed");
  for (size_t k = 0; k < frames.size(); ++k) {
    const auto flags = k + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    OutgoingFrame& f = frames[k];
    if (!f.owner) {
      peer.dealer->send(zmq::const_buffer(f.data, f.size), flags);
      continue;
    }
    // ZeroMQ reads the bytes from its I/O thread later; the owner lives until it is done.
    auto* keep = new std::shared_ptr<const void>(std::move(f.owner));
    zmq::message_t message(
        const_cast<void*>(f.data), f.size,
        [](void*, void* hint) { delete static_cast<std::shared_ptr<const void>*>(hint); }, keep);
    peer.dealer->send(message, flags);
  }
}

void ZmqTransport::poll(std::chrono::milliseconds wait, TransportEvents& events) {
  poll_items_.resize(2 + peers_.size());
  poll_items_[0] = {router_.handle(), 0, ZMQ_POLLIN, 0};
  for (size_t k = 0; k < peers_.size(); ++k)
    poll_items_[k + 1] = {peers_[k]->monitor->handle(), 0, ZMQ_POLLIN, 0};
  poll_items_.back() = {router_monitor_->handle(), 0, ZMQ_POLLIN, 0};
  try {
    zmq::poll(poll_items_.data(), poll_items_.size(), std::max(wait, std::chrono::milliseconds(0)));
  } catch (const zmq::error_t&) {
    return;  // EINTR
  }
  for (size_t k = 0; k < peers_.size(); ++k) {
    if (poll_items_[k + 1].revents & ZMQ_POLLIN) read_monitor(static_cast<int32_t>(k), events);
  }
  if (poll_items_.back().revents & ZMQ_POLLIN) read_refusals(events);
  if (poll_items_[0].revents & ZMQ_POLLIN) read_router(events);
}

void ZmqTransport::read_refusals(TransportEvents& events) {
  for (;;) {
    zmq::message_t event, address;
    if (!router_monitor_->recv(event, zmq::recv_flags::dontwait)) return;
    if (event.more()) (void)router_monitor_->recv(address, zmq::recv_flags::none);
    events.on_rejected(wire::Rejection::Token,
                       "a connection refused during ZeroMQ's handshake: it did not show this job's token");
  }
}

void ZmqTransport::read_router(TransportEvents& events) {
  for (int n = 0; n < kBatch; ++n) {
    zmq::message_t identity;  // the ROUTER's name of the sending DEALER; not ours to use
    if (!router_.recv(identity, zmq::recv_flags::dontwait)) return;
    IncomingMessage m;
    m.t_begin_ticks = probes::enabled() ? probes::now_ticks() : 0;
    bool more = router_.get(zmq::sockopt::rcvmore);
    size_t frames = 0;
    while (more) {
      auto part = std::make_shared<zmq::message_t>();
      if (!router_.recv(*part, zmq::recv_flags::none)) break;
      more = part->more();
      // Frames past what any message can have are read and dropped, never kept.
      if (++frames <= wire::kMaxTensors + 3)
        m.frames.push_back({static_cast<const uint8_t*>(part->data()), part->size(), part});
    }
    if (frames > wire::kMaxTensors + 3) {
      events.on_rejected(wire::Rejection::Malformed, detail::concat("message of ", frames, " frames"));
      continue;
    }
    events.on_message(std::move(m));
  }
}

void ZmqTransport::read_monitor(int32_t id, TransportEvents& events) {
  Peer& peer = *peers_[static_cast<size_t>(id)];
  for (;;) {
    // An event is two frames: 2 bytes of event and 4 of value, then the endpoint.
    zmq::message_t event, address;
    if (!peer.monitor->recv(event, zmq::recv_flags::dontwait)) return;
    if (event.more()) (void)peer.monitor->recv(address, zmq::recv_flags::none);
    if (event.size() < sizeof(uint16_t)) continue;
    uint16_t code = 0;
    std::memcpy(&code, event.data(), sizeof(code));
    if (code == ZMQ_EVENT_CONNECTED) events.on_peer_connected(id);
    if (code == ZMQ_EVENT_DISCONNECTED) events.on_peer_lost(id);
  }
}

void ZmqTransport::close() {
  if (closed_.exchange(true)) return;
  for (auto& p : peers_) {
    std::lock_guard<std::mutex> lock(p->mutex);
    zmq_socket_monitor(p->dealer->handle(), nullptr, 0);
    p->monitor->close();
    p->dealer->close();
  }
  zmq_socket_monitor(router_.handle(), nullptr, 0);
  router_monitor_->close();
  router_.close();
  gate_->close();  // its socket too, before the context ends
}

}  // namespace ddpscope::rpc
