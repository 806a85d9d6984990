#include "loopback_transport.h"

#include <atomic>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::rpc::testing {

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<LoopbackHub> hub, int32_t id) : hub_(std::move(hub)), id_(id) {}
  ~LoopbackTransport() override { close(); }

  std::string endpoint() const override { return "loopback://" + std::to_string(id_); }
  void connect(const std::vector<std::string>&) override { hub_->announce(id_, true); }
  void send(int32_t dst, std::vector<OutgoingFrame> frames) override {
    DDPSCOPE_CHECK(!closed_, "the loopback transport of worker ", id_, " is closed");
    IncomingMessage m;
    for (OutgoingFrame& f : frames) {
      // Owned bytes travel as they are (zero copy, as ZeroMQ does); the rest is copied.
      if (f.owner) {
        m.frames.push_back({static_cast<const uint8_t*>(f.data), f.size, std::move(f.owner)});
      } else {
        auto copy = std::make_shared<std::vector<uint8_t>>(f.size);
        if (f.size) std::memcpy(copy->data(), f.data, f.size);
        m.frames.push_back({copy->data(), copy->size(), copy});
      }
    }
    hub_->deliver(dst, std::move(m));
  }
  void poll(std::chrono::milliseconds wait, TransportEvents& events) override {
    LoopbackHub::Inbox& in = *hub_->inboxes_.at(static_cast<size_t>(id_));
    std::deque<IncomingMessage> messages;
    std::vector<std::pair<int32_t, bool>> peer_events;
    {
      std::unique_lock<std::mutex> lock(in.mutex);
      in.ready.wait_for(lock, wait, [&] { return !in.messages.empty() || !in.peer_events.empty(); });
      messages.swap(in.messages);
      peer_events.swap(in.peer_events);
    }
    for (auto [peer, connected] : peer_events) {
      if (connected) {
        events.on_peer_connected(peer);
      } else {
        events.on_peer_lost(peer);
      }
    }
    for (auto& m : messages)
      events.on_message(std::move(m));
  }
  void close() override {
    if (closed_.exchange(true)) return;
    hub_->cut_off(id_);
  }

 private:
  std::shared_ptr<LoopbackHub> hub_;
  int32_t id_;
  std::atomic<bool> closed_{false};  // send() may run on any thread
};

LoopbackHub::LoopbackHub(int workers) {
  for (int i = 0; i < workers; ++i)
    inboxes_.push_back(std::make_unique<Inbox>());
}

std::unique_ptr<Transport> LoopbackHub::transport(int32_t id) {
  return std::make_unique<LoopbackTransport>(shared_from_this(), id);
}

void LoopbackHub::deliver(int32_t dst, IncomingMessage m) {
  Inbox& in = *inboxes_.at(static_cast<size_t>(dst));
  {
    std::lock_guard<std::mutex> lock(in.mutex);
    if (!in.open) return;  // lost, as on a broken connection
    in.messages.push_back(std::move(m));
  }
  in.ready.notify_one();
}

void LoopbackHub::announce(int32_t peer, bool connected) {
  for (size_t k = 0; k < inboxes_.size(); ++k) {
    if (static_cast<int32_t>(k) == peer) continue;
    Inbox& in = *inboxes_[k];
    {
      std::lock_guard<std::mutex> lock(in.mutex);
      in.peer_events.emplace_back(peer, connected);
    }
    in.ready.notify_one();
  }
}

void LoopbackHub::cut_off(int32_t id) {
  {
    Inbox& in = *inboxes_.at(static_cast<size_t>(id));
    std::lock_guard<std::mutex> lock(in.mutex);
    if (!in.open) return;
    in.open = false;
    in.messages.clear();
  }
  announce(id, false);
}

void LoopbackHub::inject(int32_t dst, std::vector<std::string> frames) {
  IncomingMessage m;
  for (auto& f : frames) {
    auto bytes = std::make_shared<std::string>(std::move(f));
    m.frames.push_back({reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), bytes});
  }
  deliver(dst, std::move(m));
}

}  // namespace ddpscope::rpc::testing
