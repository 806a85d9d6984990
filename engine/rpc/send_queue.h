// What a stream transport (TCP, shared memory) has not yet written to one peer, in order.
// A send writes what the connection takes at once, from the calling thread; the rest waits
// here, and the transport's poll() writes it as room comes. So a send never blocks on a
// peer that is not reading, and messages to one peer keep their order.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "transport.h"

namespace ddpscope::rpc {

// The pieces of one message as a connection writes them: `head` (the frame count and
// sizes), then each frame's own bytes (none copied).
std::vector<iovec> message_pieces(std::vector<uint8_t>& head, const std::vector<OutgoingFrame>& frames);

// Writes what it can of `pieces`, advancing them: written entries get length 0, a partly
// written one moves past what went. Returns the bytes written, or -1 when the connection
// broke. A transport's write_some has this shape.
using WriteSome = std::function<ssize_t(std::vector<iovec>& pieces)>;

class SendQueue {
 public:
  bool empty() const { return pending_.empty(); }
  // Keeps what a write left of a message's `pieces`: copies of the head and of frames
  // without an owner, the frames with one as they are (their bytes stay valid).
  void keep(const std::vector<iovec>& pieces, const std::vector<OutgoingFrame>& frames);
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

}  // namespace ddpscope::rpc
