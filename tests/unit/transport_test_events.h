// What the transport tests (tst_zmq_transport, tst_tcp_transport) share: a recorder of
// what a transport reported, polling until a condition, and frames as strings.
#pragma once

#include <QElapsedTimer>
#include <string>
#include <vector>

#include "rpc/transport.h"

namespace ddpscope::rpc::testing {

// What a transport reported.
struct Heard : TransportEvents {
  std::vector<IncomingMessage> messages;
  std::vector<int32_t> connected, lost;
  int rejected = 0;
  void on_message(IncomingMessage m) override { messages.push_back(std::move(m)); }
  void on_rejected(wire::Rejection, const std::string&) override { ++rejected; }
  void on_peer_connected(int32_t p) override { connected.push_back(p); }
  void on_peer_lost(int32_t p) override { lost.push_back(p); }
};

// Polls `t` until `done` or 10 s.
template <typename Done>
bool pollUntil(Transport& t, Heard& heard, Done done) {
  QElapsedTimer timer;
  timer.start();
  while (!done() && timer.elapsed() < 10000)
    t.poll(std::chrono::milliseconds(20), heard);
  return done();
}

inline OutgoingFrame copied(const std::string& s) { return {s.data(), s.size(), nullptr}; }

inline std::string text(const IncomingFrame& f) { return std::string(reinterpret_cast<const char*>(f.data), f.size); }

}  // namespace ddpscope::rpc::testing
