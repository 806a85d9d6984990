// The RPC wire format (WIRE.md): what one agent's message looks like as ZeroMQ frames,
// and the decoder every received message goes through before anything acts on it.
//
// This file knows no Tensor, socket or thread: a message is a list of byte frames in,
// a checked DecodedMessage out, or a WireError saying what was wrong. The fuzzer
// (tests/fuzz/fuzz_rpc_wire.cpp) builds it alone. message_codec.h turns a
// DecodedMessage into rpc::Values and Values into frames.
//
// Decoding never trusts a length: every count and size is checked against the bytes
// actually received before it is used, so no field can make it allocate more than the
// message's own size or read past its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/error.h"

namespace ddpscope::rpc::wire {

inline constexpr uint32_t kMagic = 0x43505244;  // "DRPC" little-endian
inline constexpr uint16_t kVersion = 1;
// Header flags. Autograd: the sender recorded a send function for this message's
// tensors that require grad (distributed autograd); the receiver records the recv.
inline constexpr uint8_t kFlagAutograd = 1;
inline constexpr size_t kMaxDepth = 32;      // nesting of lists
inline constexpr size_t kMaxDims = 16;       // tensor rank
inline constexpr size_t kMaxTensors = 4096;  // tensor frames in one message

enum class MessageType : uint8_t {
  Call = 1,             // run a function: [name, [args...]]
  Response = 2,         // a call's result: value
  Error = 3,            // a call's failure: "message"
  RemoteCall = 4,       // run a function, keep the result as an OwnerRRef: [name, [args], rref, fork]
  RRefFetch = 5,        // to_here: [rref]; answered by Response or Error
  RRefUserDelete = 6,   // a UserRRef died: [rref, fork]; answered by Ack
  RRefForkRequest = 7,  // a user-to-user fork asks the owner to count it: [rref, fork]; Ack
  RRefChildAccept = 8,  // the owner (or new user) confirms a child fork to its parent: [fork]; Ack
  Ack = 9,              // an RRef control message was handled: none
};
inline constexpr uint8_t kMaxMessageType = 9;
const char* message_type_name(MessageType type);
// Responses complete a pending call; the rest are requests.
inline bool is_reply(MessageType t) {
  return t == MessageType::Response || t == MessageType::Error || t == MessageType::Ack;
}

// Frame 1 of every message, little-endian, 40 bytes.
struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint8_t type = 0;
  uint8_t flags = 0;
  int32_t src = -1;          // sending worker id
  int32_t dst = -1;          // receiving worker id
  uint64_t msg_id = 0;       // (sender id << 48) | counter; a reply repeats its request's
  int64_t ctx_id = -1;       // distributed autograd context, -1: none
  uint32_t num_tensors = 0;  // tensor frames after the body
  uint32_t reserved = 0;
};
static_assert(sizeof(Header) == 40, "the header's layout is the wire's");

// Tags of the values in the body (frame 2).
enum class Tag : uint8_t { None = 0, Bool = 1, Int = 2, Double = 3, String = 4, List = 5, Tensor = 6, RRef = 7 };
// Element types as sent; the same codes as ddpscope::DType (f32 f64 f16 bf16 i64).
inline constexpr uint8_t kNumDTypes = 5;
inline constexpr size_t kDTypeSizes[kNumDTypes] = {4, 8, 2, 2, 8};

struct TensorMeta {
  uint8_t dtype = 0;
  bool requires_grad = false;
  std::vector<int64_t> sizes;
  uint32_t frame = 0;  // index among the tensor frames
};
// An RRef as it travels: whose it is, which one, and the fork this copy becomes.
struct RRefMeta {
  int32_t owner = -1;
  int64_t rref_id = -1;
  int64_t fork_id = -1;  // -1: the owner sends its own RRef to itself
  int32_t parent = -1;   // the worker that forked it (the sender)
};

// One decoded value: a parse tree whose tensors are descriptions of frames.
struct WireValue {
  Tag tag = Tag::None;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<WireValue> list;
  TensorMeta tensor;
  RRefMeta rref;
};

// A received frame: bytes owned by the caller, alive while the decoded message is used.
struct FrameView {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

struct DecodedMessage {
  Header header;
  WireValue body;
  std::vector<FrameView> tensor_frames;  // num_tensors of them, in order
};

// The reason a message was refused; what the agent counts.
enum class Rejection : uint8_t { Token, Malformed };
class WireError : public Error {
 public:
  WireError(Rejection why, const std::string& what) : Error(what, "rpc/wire", 0), why_(why) {}
  Rejection rejection() const { return why_; }

 private:
  Rejection why_;
};

// Checks and decodes the frames after the routing identity: [token, header, body,
// tensor frames...]. `token` is the job's; a wrong one is rejected before the rest is
// read. Throws WireError.
DecodedMessage decode_message(const std::vector<FrameView>& frames, std::string_view token);

// Builds a body (frame 2); message_codec.cpp fills it from rpc::Values.
class BodyWriter {
 public:
  void none() { tag(Tag::None); }
  void boolean(bool v);
  void integer(int64_t v);
  void real(double v);
  void string(std::string_view v);
  void list(uint32_t count);  // followed by `count` values
  void tensor(uint8_t dtype, bool requires_grad, const std::vector<int64_t>& sizes, uint32_t frame);
  void rref(const RRefMeta& r);
  std::string take() { return std::move(out_); }

 private:
  void tag(Tag t) { out_.push_back(static_cast<char>(t)); }
  template <typename T>
  void pod(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  std::string out_;
};

// Packs and unpacks the globally unique ids of messages, RRefs and forks:
// (worker id << 48) | a counter of that worker.
inline int64_t make_global_id(int32_t worker, uint64_t local) {
  return static_cast<int64_t>((static_cast<uint64_t>(worker) << 48) | (local & 0xffffffffffffULL));
}
inline int32_t id_worker(int64_t id) { return static_cast<int32_t>(static_cast<uint64_t>(id) >> 48); }
inline uint64_t id_local(int64_t id) { return static_cast<uint64_t>(id) & 0xffffffffffffULL; }
// "(1, 7)": how ids appear in messages to users.
std::string format_id(int64_t id);

}  // namespace ddpscope::rpc::wire
