// The ZeroMQ transport (DDPSCOPE_RPC_TRANSPORT=zmq; jobs use shared memory and TCP by
// default: transport_choice.h).
//
// Sockets: one ROUTER socket bound to the address the agent chose (loopback when every
// worker runs on this host, else the address the other hosts reach it by, never every
// interface unasked), and one DEALER socket connected to each worker's ROUTER. Every
// message goes out through the DEALER of its destination and comes in through the
// destination's ROUTER. ZeroMQ's monitor of each DEALER says when its connection breaks
// or comes back, so calls to a dead worker fail at once rather than at their timeout.
// Connections authenticate with ZeroMQ's PLAIN mechanism, the job's token as password,
// checked during the handshake (zap_token_gate.h): a peer without it sends no message.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>
#include <zmq.hpp>

#include "transport.h"
#include "zap_token_gate.h"

namespace ddpscope::rpc {

class ZmqTransport final : public Transport {
 public:
  // Binds to an ephemeral port of `address`; throws Error naming the address when it cannot.
  ZmqTransport(const std::string& address, int64_t max_frame_bytes);
  ~ZmqTransport() override;

  std::string endpoint() const override { return endpoint_; }
  void expect_token(const std::string& token) override;
  void connect(const std::vector<std::string>& endpoints) override;
  void send(int32_t dst, std::vector<OutgoingFrame> frames) override;
  void poll(std::chrono::milliseconds wait, TransportEvents& events) override;
  void close() override;
  // Connections refused during ZeroMQ's handshake for a wrong token.
  uint64_t refused_connections() const { return gate_->refused(); }

 private:
  struct Peer {
    std::mutex mutex;  // one sender at a time: a message's frames go out together
    std::unique_ptr<zmq::socket_t> dealer;
    std::unique_ptr<zmq::socket_t> monitor;
  };
  void read_router(TransportEvents& events);
  void read_monitor(int32_t peer, TransportEvents& events);
  void read_refusals(TransportEvents& events);

  zmq::context_t context_;
  std::unique_ptr<ZapTokenGate> gate_;  // before router_: it must answer the first handshake
  std::string token_;                   // this worker's password to the others
  zmq::socket_t router_;
  // The ROUTER's failed handshakes (a wrong token, no token, not ZeroMQ at all): each is
  // told to the agent as a refusal, which the run's stats count.
  std::unique_ptr<zmq::socket_t> router_monitor_;
  std::string endpoint_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<zmq::pollitem_t> poll_items_;  // poll()'s thread only
  std::atomic<bool> closed_{false};
};

}  // namespace ddpscope::rpc
