// What the transport tests (tst_transport_conformance and each transport's own) share:
// a recorder of what a transport reported, polling until a condition, frames as strings,
// and the check that a large message waits its turn without blocking its sender.
#pragma once

#include <QElapsedTimer>
#include <QtTest/QtTest>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rpc/transport.h"

namespace ddpscope::rpc::testing {

// What a transport reported.
struct Heard : TransportEvents {
  std::vector<IncomingMessage> messages;
  std::vector<int32_t> connected, lost;
  int rejected = 0;
  std::string last_rejection;  // why, as the transport said it
  void on_message(IncomingMessage m) override { messages.push_back(std::move(m)); }
  void on_rejected(wire::Rejection, const std::string& why) override {
    ++rejected;
    last_rejection = why;
  }
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

// Polls both until `done` or 20 s, as two agents would.
template <typename Done>
bool pollBoth(Transport& a, Heard& ha, Transport& b, Heard& hb, Done done) {
  QElapsedTimer timer;
  timer.start();
  while (!done() && timer.elapsed() < 20000) {
    a.poll(std::chrono::milliseconds(1), ha);
    b.poll(std::chrono::milliseconds(1), hb);
  }
  return done();
}

inline OutgoingFrame copied(const std::string& s) { return {s.data(), s.size(), nullptr}; }

inline std::string text(const IncomingFrame& f) { return std::string(reinterpret_cast<const char*>(f.data), f.size); }

// 64 MiB sent from `a` to worker 1 (`b`, connected) while `b` does not read: the send
// returns at once, the rest waits in `a`'s queue, and a message after it keeps its place.
inline void checkALargeMessageWaitsItsTurn(Transport& a, Transport& b) {
  auto big = std::make_shared<std::vector<uint8_t>>(64 << 20);
  for (size_t i = 0; i < big->size(); ++i)
    (*big)[i] = static_cast<uint8_t>(i * 7);
  QElapsedTimer sent;
  sent.start();
  a.send(1, {{big->data(), big->size(), big}});
  const std::string after = "after";
  a.send(1, {copied(after)});
  QVERIFY2(sent.elapsed() < 2000, "send waited for the receiver");
  Heard heard, sender;
  QVERIFY(pollBoth(a, sender, b, heard, [&] { return heard.messages.size() == 2; }));
  QCOMPARE(heard.messages[0].frames[0].size, big->size());
  QVERIFY(std::memcmp(heard.messages[0].frames[0].data, big->data(), big->size()) == 0);
  QCOMPARE(text(heard.messages[1].frames[0]), after);
}

}  // namespace ddpscope::rpc::testing
