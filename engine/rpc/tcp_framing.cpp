#include "tcp_framing.h"

#include <algorithm>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::rpc {

std::vector<uint8_t> encode_frame_sizes(const std::vector<OutgoingFrame>& frames) {
  std::vector<uint8_t> head(4 + 8 * frames.size());
  const auto n = static_cast<uint32_t>(frames.size());
  std::memcpy(head.data(), &n, 4);  // little-endian hosts only, as the wire format (wire_format.h)
  for (size_t k = 0; k < frames.size(); ++k) {
    const uint64_t size = frames[k].size;
    std::memcpy(head.data() + 4 + 8 * k, &size, 8);
  }
  return head;
}

FrameReader::FrameReader(int64_t max_frame_bytes, std::function<int64_t()> clock)
    : max_frame_bytes_(max_frame_bytes), clock_(std::move(clock)) {}

std::pair<uint8_t*, size_t> FrameReader::space() {
  direct_ = body_ && begin_ == end_ && body_size_ - body_got_ >= kBuffer;
  if (direct_) return {body_.get() + body_got_, body_size_ - body_got_};  // a large frame: no copy through ours
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (end_ == buf_.size()) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  return {buf_.data() + end_, buf_.size() - end_};
}

bool FrameReader::received(size_t n, const std::function<void(IncomingMessage)>& on_message, std::string* why) {
  if (direct_)
    body_got_ += n;
  else
    end_ += n;
  return parse(on_message, why);
}

bool FrameReader::parse(const std::function<void(IncomingMessage)>& on_message, std::string* why) {
  for (;;) {
    const uint8_t* p = buf_.data() + begin_;
    const size_t avail = end_ - begin_;
    if (!body_) {
      if (count_ < 0) {  // a message starts: its frame count
        if (avail < 4) return true;
        uint32_t n;
        std::memcpy(&n, p, 4);
        if (n == 0 || n > kMaxFramesPerMessage) {
          *why = detail::concat("message of ", n, " frames (1 to ", kMaxFramesPerMessage, ")");
          return false;
        }
        count_ = n;
        begin_ += 4;
        t_begin_ticks_ = clock_ ? clock_() : 0;
        continue;
      }
      const size_t need = 8 * static_cast<size_t>(count_);  // at most 32 KiB: it fits the buffer
      if (avail < need) return true;
      sizes_.resize(static_cast<size_t>(count_));
      std::memcpy(sizes_.data(), p, need);
      begin_ += need;
      uint64_t total = 0;
      for (uint64_t size : sizes_) {
        if (size > static_cast<uint64_t>(max_frame_bytes_)) {
          *why = detail::concat("frame of ", size, " bytes (at most ", max_frame_bytes_, ")");
          return false;
        }
        total += size;
      }
      body_size_ = static_cast<size_t>(total);
      body_got_ = 0;
      body_ = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(body_size_, 1)]);
      continue;
    }
    const size_t take = std::min(body_size_ - body_got_, avail);
    std::memcpy(body_.get() + body_got_, p, take);
    begin_ += take;
    body_got_ += take;
    if (body_got_ < body_size_) return true;
    IncomingMessage m;
    m.t_begin_ticks = t_begin_ticks_;
    size_t offset = 0;
    for (uint64_t size : sizes_) {  // each frame a view of the one buffer, which it keeps
      m.frames.push_back({body_.get() + offset, static_cast<size_t>(size), body_});
      offset += static_cast<size_t>(size);
    }
    body_.reset();
    count_ = -1;
    on_message(std::move(m));
  }
}

}  // namespace ddpscope::rpc
