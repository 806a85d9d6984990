#include "send_queue.h"

#include <climits>

#include "stream_framing.h"

namespace ddpscope::rpc {

MessagePieces::MessagePieces(const std::vector<OutgoingFrame>& frames) {
  const size_t head_bytes = frame_sizes_bytes(frames.size());
  uint8_t* head = head_inline_.data();
  if (head_bytes > head_inline_.size()) {
    head_heap_.resize(head_bytes);
    head = head_heap_.data();
  }
  write_frame_sizes(frames, head);
  iovec* out = inline_.data();
  if (frames.size() > kInlineFrames) {
    heap_.resize(frames.size() + 1);
    out = heap_.data();
  }
  out[count_++] = {head, head_bytes};
  for (const auto& f : frames)
    if (f.size > 0) out[count_++] = {const_cast<void*>(f.data), f.size};
}

void SendQueue::keep(std::span<const iovec> pieces, const std::vector<OutgoingFrame>& frames) {
  size_t frame = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const iovec& v = pieces[k];
    if (v.iov_len == 0) continue;
    const auto* bytes = static_cast<const uint8_t*>(v.iov_base);
    // The frame these bytes are part of (pieces[0] is the head, in none of them).
    while (k > 0 && frame < frames.size() &&
           !(bytes >= static_cast<const uint8_t*>(frames[frame].data) &&
             bytes < static_cast<const uint8_t*>(frames[frame].data) + frames[frame].size))
      ++frame;
    Pending p;
    if (k > 0 && frame < frames.size() && frames[frame].owner) {
      p.data = bytes;
      p.size = v.iov_len;
      p.owner = frames[frame].owner;
    } else {
      p.copy.assign(bytes, bytes + v.iov_len);
      p.data = p.copy.data();
      p.size = p.copy.size();
    }
    pending_.push_back(std::move(p));
  }
}

bool SendQueue::flush(const WriteSome& write) {
  while (!pending_.empty()) {
    std::vector<iovec> pieces;
    for (size_t k = 0; k < pending_.size() && k < IOV_MAX; ++k)
      pieces.push_back({const_cast<uint8_t*>(pending_[k].data), pending_[k].size});
    const ssize_t n = write(std::span<iovec>(pieces));
    if (n < 0) return false;
    auto left = static_cast<size_t>(n);
    while (!pending_.empty() && left >= pending_.front().size) {
      left -= pending_.front().size;
      pending_.pop_front();
    }
    if (left > 0) {
      pending_.front().data += left;
      pending_.front().size -= left;
    }
    if (n == 0 || !pending_.empty()) return true;  // full again: the next chance goes on
  }
  return true;
}

}  // namespace ddpscope::rpc
