// The workers a stream transport (TCP, shared memory) sends to, by worker id: for each, the
// lock its senders take, what waits for room (send_queue.h), whether it is gone, and what
// the agent was told of it. Each transport's own peer adds its descriptors.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "send_queue.h"

namespace ddpscope::rpc {

struct StreamPeer {
  std::mutex mutex;
  SendQueue queue;  // what the connection had no room for yet, written by poll()
  bool lost = false;
  PeerNews news;  // its state as told to the agent
};

template <typename Peer>  // a StreamPeer with the transport's descriptors
class StreamPeers {
 public:
  // A worker's peer, or null: a worker this transport does not serve (another reaches it).
  void add(std::unique_ptr<Peer> peer) { peers_.push_back(std::move(peer)); }
  size_t size() const { return peers_.size(); }
  Peer* find(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < peers_.size() ? peers_[static_cast<size_t>(id)].get() : nullptr;
  }
  bool serves(int32_t id) const { return find(id) != nullptr; }

  // What happened to each peer since the last call, said once (poll()'s start).
  void report(TransportEvents& events) {
    for (size_t r = 0; r < peers_.size(); ++r) {
      if (!peers_[r]) continue;
      int news;
      {
        std::lock_guard<std::mutex> lock(peers_[r]->mutex);
        news = peers_[r]->news.take(peers_[r]->lost);
      }
      tell(events, static_cast<int32_t>(r), news);
    }
  }

  // The transport closes: each peer lets go of its descriptors (`release`, under its lock)
  // and of what waited; the agent is told nothing (closed here: no peer lost).
  template <typename Release>
  void close_all(Release release) {
    for (auto& p : peers_) {
      if (!p) continue;
      std::lock_guard<std::mutex> lock(p->mutex);
      release(*p);
      p->lost = true;
      p->news.closed();
      p->queue.clear();
    }
  }

 private:
  std::vector<std::unique_ptr<Peer>> peers_;
};

}  // namespace ddpscope::rpc
