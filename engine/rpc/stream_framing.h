// The stream transports' framing (TCP's sockets and shared memory's rings; WIRE.md, "The TCP
// transport"): a message is a u32 frame count, a u64 size per frame, then the frames' bytes. FrameReader turns the
// bytes of a connection, as they come, back into messages; it touches no socket, so the fuzzer runs it alone
// (tests/fuzz/fuzz_stream_framing.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport.h"

namespace ddpscope::rpc {

// The frames a message may have: the token, header and body, and the tensors.
inline constexpr uint32_t kMaxFramesPerMessage = wire::kMaxTensors + 3;

// The count and sizes that go before `frames` on the wire: frame_sizes_bytes(n) bytes,
// written into `out` or returned.
constexpr size_t frame_sizes_bytes(size_t frames) { return 4 + 8 * frames; }
void write_frame_sizes(const std::vector<OutgoingFrame>& frames, uint8_t* out);
std::vector<uint8_t> encode_frame_sizes(const std::vector<OutgoingFrame>& frames);

class FrameReader {
 public:
  // Frames past `max_frame_bytes` are refused. `clock`: the probes' clock, read when a
  // message's first bytes are parsed (null: 0).
  explicit FrameReader(int64_t max_frame_bytes, std::function<int64_t()> clock = {});

  // Where the next read should put its bytes, and how many it may: straight into a large
  // frame's buffer, else the reader's own.
  std::pair<uint8_t*, size_t> space();
  // `n` bytes were put where space() said. Every message they complete goes to
  // `on_message`, in order; false, with *why, when they are not this framing (a count or
  // size out of range): nothing after that can be trusted.
  bool received(size_t n, const std::function<void(IncomingMessage)>& on_message, std::string* why);

  // Bytes of the message being read still to come (0 between messages).
  size_t body_left() const { return body_ ? body_left_ : 0; }

  // The connection's first message must start with `token` (its first frame, compared in
  // constant time) before the rest of it is read or a byte allocated for it: until then a
  // connection holds at most its frame sizes and the token in the reader's own buffer.
  // Empty: no check here. refused_token(): received() failed for that reason.
  void expect_token(std::string token) { token_ = std::move(token); }
  bool refused_token() const { return refused_token_; }
  // The token was shown (or none is asked for).
  bool verified() const { return verified_ || token_.empty(); }

  static constexpr size_t kBuffer = 64 * 1024;

 private:
  bool parse(const std::function<void(IncomingMessage)>& on_message, std::string* why);
  bool allocate_body(size_t bytes);
  bool reuse_spare(size_t bytes);
  // Moves on past frames that are whole; true when the message is.
  bool frames_done();
  // The token check, before the first body: true when passed (or not asked for); false with
  // *why when refused; `wait` when its bytes have not all come.
  bool check_token(const uint8_t* p, size_t avail, bool& wait, std::string* why);

  int64_t max_frame_bytes_;
  std::function<int64_t()> clock_;
  std::vector<uint8_t> buf_;    // kBuffer bytes from the first space()
  size_t begin_ = 0, end_ = 0;  // unparsed bytes of buf_
  int64_t count_ = -1;          // frames of the message being read; -1: its count not read yet
  std::vector<uint64_t> sizes_;
  // Every frame of the message, each at a 64-byte boundary of one buffer: a tensor's bytes
  // are then aligned for its dtype and adopted without a copy (message_codec.cpp).
  std::shared_ptr<uint8_t[]> body_;
  size_t body_bytes_ = 0;
  size_t body_bytes_wanted_ = 0;  // the message's, with its frames aligned
  // The last message's buffer, taken again once no tensor holds it (reuse_spare).
  std::shared_ptr<uint8_t[]> spare_;
  size_t spare_bytes_ = 0;
  std::vector<size_t> offsets_;
  size_t frame_ = 0, frame_got_ = 0;  // the frame being filled, and its bytes so far
  size_t body_left_ = 0;
  bool direct_ = false;      // the last space() was in body_
  bool sizes_read_ = false;  // the message's sizes are in sizes_ (its body not allocated yet)
  std::string token_;
  bool verified_ = false, refused_token_ = false;
  int64_t t_begin_ticks_ = 0;
};

}  // namespace ddpscope::rpc
