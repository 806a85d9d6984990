// A transport for tests that wraps another and delays or drops what it receives, by
// message type: tests reorder or lose the protocol's messages without the agent knowing.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "rpc/transport.h"

namespace ddpscope::rpc::testing {

class FaultTransport final : public Transport {
 public:
  explicit FaultTransport(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}

  // Holds the next `count` incoming messages of `type` for `delay` each.
  void delay_incoming(wire::MessageType type, std::chrono::milliseconds delay, int count);
  // Drops the next `count` incoming messages of `type`.
  void drop_incoming(wire::MessageType type, int count);
  int dropped() const;

  std::string endpoint() const override { return inner_->endpoint(); }
  void expect_token(const std::string& token) override { inner_->expect_token(token); }
  void connect(const std::vector<std::string>& endpoints) override { inner_->connect(endpoints); }
  void send(int32_t dst, std::vector<OutgoingFrame> frames) override { inner_->send(dst, std::move(frames)); }
  void poll(std::chrono::milliseconds wait, TransportEvents& events) override;
  void close() override { inner_->close(); }

 private:
  using Clock = std::chrono::steady_clock;
  class Filter;
  struct Rule {
    std::chrono::milliseconds delay{0};
    int delay_count = 0;
    int drop_count = 0;
  };
  struct Held {
    IncomingMessage message;
    Clock::time_point due;
  };
  // What to do with `m`: true when it is passed on now.
  bool admit(IncomingMessage& m);

  std::unique_ptr<Transport> inner_;
  mutable std::mutex mutex_;
  std::map<uint8_t, Rule> rules_;
  int dropped_ = 0;
  std::vector<Held> held_;  // poll()'s thread only
};

}  // namespace ddpscope::rpc::testing
