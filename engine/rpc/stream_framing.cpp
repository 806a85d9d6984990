#include "stream_framing.h"

#include <atomic>

#include <algorithm>
#include <cstring>
#include <new>

#include "ddpscope/error.h"

namespace ddpscope::rpc {

void write_frame_sizes(const std::vector<OutgoingFrame>& frames, uint8_t* out) {
  const auto n = static_cast<uint32_t>(frames.size());
  std::memcpy(out, &n, 4);  // little-endian hosts only, as the wire format (wire_format.h)
  for (size_t k = 0; k < frames.size(); ++k) {
    const uint64_t size = frames[k].size;
    std::memcpy(out + 4 + 8 * k, &size, 8);
  }
}

std::vector<uint8_t> encode_frame_sizes(const std::vector<OutgoingFrame>& frames) {
  std::vector<uint8_t> head(frame_sizes_bytes(frames.size()));
  write_frame_sizes(frames, head.data());
  return head;
}

FrameReader::FrameReader(int64_t max_frame_bytes, std::function<int64_t()> clock)
    : max_frame_bytes_(max_frame_bytes), clock_(std::move(clock)) {}

std::pair<uint8_t*, size_t> FrameReader::space() {
  const size_t frame_left = body_ ? sizes_[frame_] - frame_got_ : 0;
  direct_ = body_ && begin_ == end_ && frame_left >= kBuffer;
  if (direct_) return {body_.get() + offsets_[frame_] + frame_got_, frame_left};  // a large frame: no copy through ours
  if (buf_.empty()) buf_.resize(kBuffer);  // at the first read: an idle connection holds none
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
  if (direct_) {
    frame_got_ += n;
    body_left_ -= n;
  } else {
    end_ += n;
  }
  return parse(on_message, why);
}

bool FrameReader::frames_done() {
  while (frame_ < sizes_.size() && frame_got_ == sizes_[frame_]) {
    ++frame_;
    frame_got_ = 0;
  }
  return frame_ == sizes_.size();
}

// One allocation for the message; a large one is mapped lazily by malloc, so a size claimed
// and never sent costs address space, not memory.
bool FrameReader::allocate_body(size_t bytes) {
  try {
    constexpr std::align_val_t kAlign{64};
    body_bytes_ = std::max<size_t>(bytes, 1);
    body_ = std::shared_ptr<uint8_t[]>(static_cast<uint8_t*>(::operator new[](body_bytes_, kAlign)),
                                       [](uint8_t* b) { ::operator delete[](b, kAlign); });
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

// A message goes into the last one's buffer when nothing else holds it any more and it is at
// most twice the size: no allocation for a message (a fresh 1 MiB buffer would also cost
// 256 page faults, where malloc maps and unmaps buffers that large).
bool FrameReader::reuse_spare(size_t bytes) {
  if (!spare_ || spare_bytes_ < bytes || spare_bytes_ / 2 > bytes || spare_.use_count() != 1) return false;
  std::atomic_thread_fence(std::memory_order_acquire);  // the last holder's reads happen before our writes
  body_ = spare_;
  body_bytes_ = spare_bytes_;
  return true;
}

bool FrameReader::check_token(const uint8_t* p, size_t avail, bool& wait, std::string* why) {
  if (verified_ || token_.empty()) return true;
  if (sizes_[0] != token_.size()) {
    refused_token_ = true;
    *why = detail::concat("a connection whose first message does not start with the job's token (a first frame of ",
                          sizes_[0], " bytes; the token has ", token_.size(), ")");
    return false;
  }
  if (avail < token_.size()) {
    wait = true;
    return true;
  }
  uint8_t diff = 0;  // in constant time: the comparison does not tell how much matched
  for (size_t i = 0; i < token_.size(); ++i)
    diff |= static_cast<uint8_t>(p[i] ^ static_cast<uint8_t>(token_[i]));
  if (diff != 0) {
    refused_token_ = true;
    *why = "a connection whose first message carries another token than the job's";
    return false;
  }
  verified_ = true;
  return true;
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
      if (!sizes_read_) {
        const size_t need = 8 * static_cast<size_t>(count_);  // at most 32 KiB: it fits the buffer
        if (avail < need) return true;
        sizes_.resize(static_cast<size_t>(count_));
        std::memcpy(sizes_.data(), p, need);
        begin_ += need;
        size_t at = 0;
        offsets_.clear();
        body_left_ = 0;
        for (uint64_t size : sizes_) {
          if (size > static_cast<uint64_t>(max_frame_bytes_)) {
            *why = detail::concat("frame of ", size, " bytes (at most ", max_frame_bytes_, ")");
            return false;
          }
          at = (at + 63) / 64 * 64;
          offsets_.push_back(at);
          at += static_cast<size_t>(size);
          body_left_ += static_cast<size_t>(size);
        }
        body_bytes_wanted_ = at;
        sizes_read_ = true;
        continue;
      }
      bool wait = false;
      if (!check_token(p, avail, wait, why)) return false;
      if (wait) return true;
      const size_t at = body_bytes_wanted_;
      sizes_read_ = false;
      if (!reuse_spare(at) && !allocate_body(at)) {
        *why = detail::concat("message of ", at, " bytes: more than this process can hold");
        return false;
      }
      frame_ = frame_got_ = 0;
      continue;
    }
    if (!frames_done()) {  // the frame being filled takes what the buffer has of it
      if (avail == 0) return true;
      const size_t take = std::min(sizes_[frame_] - frame_got_, avail);
      std::memcpy(body_.get() + offsets_[frame_] + frame_got_, p, take);
      begin_ += take;
      frame_got_ += take;
      body_left_ -= take;
      continue;  // the next frame's bytes may be in the buffer already
    }
    IncomingMessage m;
    m.t_begin_ticks = t_begin_ticks_;
    for (size_t k = 0; k < sizes_.size(); ++k)  // each frame a view of the one buffer, which it keeps
      m.frames.push_back({body_.get() + offsets_[k], static_cast<size_t>(sizes_[k]), body_});
    spare_ = body_;  // kept: once its tensors are gone, the next message fills it
    spare_bytes_ = body_bytes_;
    body_.reset();
    count_ = -1;
    on_message(std::move(m));
  }
}

}  // namespace ddpscope::rpc
