// What a stream transport (TCP, shared memory) has not yet written to one peer, in order.
// A send writes what the connection takes at once, from the calling thread; the rest waits
// here, and the transport's poll() writes it as room comes. So a send never blocks on a
// peer that is not reading, and messages to one peer keep their order.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "transport.h"

namespace ddpscope::rpc {

// One message as a connection writes it: its head (the frame count and sizes), then each
// frame's own bytes (none copied). Up to kInlineFrames frames (every call but those with
// many tensors) it allocates nothing. It points into itself: neither copied nor moved.
class MessagePieces {
 public:
  explicit MessagePieces(const std::vector<OutgoingFrame>& frames);
  MessagePieces(const MessagePieces&) = delete;
  MessagePieces& operator=(const MessagePieces&) = delete;
  std::span<iovec> pieces() { return {heap_.empty() ? inline_.data() : heap_.data(), count_}; }

  static constexpr size_t kInlineFrames = 8;

 private:
  std::array<uint8_t, 4 + 8 * kInlineFrames> head_inline_;
  std::vector<uint8_t> head_heap_;
  std::array<iovec, kInlineFrames + 1> inline_;
  std::vector<iovec> heap_;
  size_t count_ = 0;
};

// Writes what it can of `pieces`, advancing them: written entries get length 0, a partly
// written one moves past what went. Returns the bytes written, or -1 when the connection
// broke. A transport's write_some has this shape.
using WriteSome = std::function<ssize_t(std::span<iovec> pieces)>;

class SendQueue {
 public:
  bool empty() const { return pending_.empty(); }
  // Keeps what a write left of a message's `pieces`: copies of the head and of frames
  // without an owner, the frames with one as they are (their bytes stay valid).
  void keep(std::span<const iovec> pieces, const std::vector<OutgoingFrame>& frames);
  // Writes as much of the queue as `write` takes. False when the connection broke.
  bool flush(const WriteSome& write);
  void clear() { pending_.clear(); }

 private:
  struct Pending {
    std::vector<uint8_t> copy;
    const uint8_t* data = nullptr;
    size_t size = 0;
    std::shared_ptr<const void> owner;
  };
  std::deque<Pending> pending_;
};

// What a transport has told its agent of one peer, so that each change is said once (on the
// poll() thread, with the peer's mutex held).
class PeerNews {
 public:
  // +1: newly connected, -1: newly lost, 0: nothing new.
  int take(bool lost) {
    const int now = lost ? 2 : 1;
    if (said_ == now) return 0;
    said_ = now;
    return lost ? -1 : 1;
  }
  void closed() { said_ = 2; }  // closed here, or never this transport's: never said lost

 private:
  int said_ = 0;
};

// Tells `events` what `news` (from PeerNews::take) says of `peer`.
inline void tell(TransportEvents& events, int32_t peer, int news) {
  if (news > 0) events.on_peer_connected(peer);
  if (news < 0) events.on_peer_lost(peer);
}

}  // namespace ddpscope::rpc
