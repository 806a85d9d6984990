#include "fault_transport.h"

#include <algorithm>
#include <cstring>

namespace ddpscope::rpc::testing {

// Stands between the inner transport and the agent's events.
class FaultTransport::Filter final : public TransportEvents {
 public:
  Filter(FaultTransport& owner, TransportEvents& agent) : owner_(owner), agent_(agent) {}
  void on_message(IncomingMessage m) override {
    if (owner_.admit(m)) agent_.on_message(std::move(m));
  }
  void on_rejected(wire::Rejection why, const std::string& what) override { agent_.on_rejected(why, what); }
  void on_peer_connected(int32_t peer) override { agent_.on_peer_connected(peer); }
  void on_peer_lost(int32_t peer) override { agent_.on_peer_lost(peer); }

 private:
  FaultTransport& owner_;
  TransportEvents& agent_;
};

void FaultTransport::delay_incoming(wire::MessageType type, std::chrono::milliseconds delay, int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  Rule& rule = rules_[static_cast<uint8_t>(type)];
  rule.delay = delay;
  rule.delay_count = count;
}

void FaultTransport::drop_incoming(wire::MessageType type, int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  rules_[static_cast<uint8_t>(type)].drop_count = count;
}

int FaultTransport::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

bool FaultTransport::admit(IncomingMessage& m) {
  // Frame 1 is the header (wire_format.h); anything else is the agent's to refuse.
  if (m.frames.size() < 2 || m.frames[1].size != sizeof(wire::Header)) return true;
  wire::Header h;
  std::memcpy(&h, m.frames[1].data, sizeof(h));
  std::lock_guard<std::mutex> lock(mutex_);
  auto rule = rules_.find(h.type);
  if (rule == rules_.end()) return true;
  if (rule->second.drop_count > 0) {
    --rule->second.drop_count;
    ++dropped_;
    return false;
  }
  if (rule->second.delay_count > 0) {
    --rule->second.delay_count;
    held_.push_back({std::move(m), Clock::now() + rule->second.delay});
    return false;
  }
  return true;
}

void FaultTransport::poll(std::chrono::milliseconds wait, TransportEvents& events) {
  // Wake in time for the first held message.
  const auto now = Clock::now();
  for (const Held& h : held_)
    wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(h.due - now));
  Filter filter(*this, events);
  inner_->poll(std::max(wait, std::chrono::milliseconds(0)), filter);
  const auto after = Clock::now();
  for (size_t k = 0; k < held_.size();) {
    if (held_[k].due <= after) {
      IncomingMessage m = std::move(held_[k].message);
      held_.erase(held_.begin() + static_cast<long>(k));
      events.on_message(std::move(m));  // once held, never held again
    } else {
      ++k;
    }
  }
}

}  // namespace ddpscope::rpc::testing
