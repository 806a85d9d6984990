#include "wire_format.h"

#include "ddpscope/byte_reader.h"

#include <cstring>
#include <limits>

namespace ddpscope::rpc::wire {
namespace {

[[noreturn]] void malformed(const std::string& what) { throw WireError(Rejection::Malformed, what); }

// Reads the body with every length checked against what is left.
struct Truncated {
  [[noreturn]] void operator()(const char* what, size_t needed, size_t left) const {
    malformed(detail::concat("body truncated reading ", what, ": ", needed, " bytes needed, ", left, " left"));
  }
};
using BodyReader = ByteReader<Truncated>;

struct TensorUse {
  std::vector<bool> used;
  const std::vector<FrameView>* frames;
};

WireValue read_value(BodyReader& r, size_t depth, TensorUse& tensors) {
  if (depth > kMaxDepth) malformed(detail::concat("values nested deeper than ", kMaxDepth));
  WireValue v;
  const auto tag = r.pod<uint8_t>("a value's tag");
  if (tag > static_cast<uint8_t>(Tag::RRef)) malformed(detail::concat("unknown value tag ", int{tag}));
  v.tag = static_cast<Tag>(tag);
  switch (v.tag) {
    case Tag::None: break;
    case Tag::Bool: {
      const auto b = r.pod<uint8_t>("a bool");
      if (b > 1) malformed(detail::concat("bool value ", int{b}, " is neither 0 nor 1"));
      v.b = b == 1;
      break;
    }
    case Tag::Int: v.i = r.pod<int64_t>("an int"); break;
    case Tag::Double: v.d = r.pod<double>("a double"); break;
    case Tag::String: {
      const auto n = r.pod<uint32_t>("a string's length");
      v.s = r.bytes(n, "a string");
      break;
    }
    case Tag::List: {
      const auto n = r.pod<uint32_t>("a list's length");
      // Every element takes at least its tag byte: a count beyond the bytes left is a
      // lie, refused before anything is reserved for it.
      if (n > r.left()) {
        malformed(detail::concat("list claims ", n, " elements but only ", r.left(), " bytes are left"));
      }
      v.list.reserve(n);
      for (uint32_t k = 0; k < n; ++k)
        v.list.push_back(read_value(r, depth + 1, tensors));
      break;
    }
    case Tag::Tensor: {
      TensorMeta& t = v.tensor;
      t.dtype = r.pod<uint8_t>("a tensor's dtype");
      if (t.dtype >= kNumDTypes) malformed(detail::concat("unknown dtype code ", int{t.dtype}));
      const auto rg = r.pod<uint8_t>("a tensor's requires_grad");
      if (rg > 1) malformed(detail::concat("requires_grad value ", int{rg}, " is neither 0 nor 1"));
      t.requires_grad = rg == 1;
      const auto ndim = r.pod<uint8_t>("a tensor's rank");
      if (ndim > kMaxDims) malformed(detail::concat("tensor rank ", int{ndim}, " exceeds ", kMaxDims));
      // Elements * element size must equal the frame's size, computed without overflow.
      uint64_t bytes = kDTypeSizes[t.dtype];
      for (uint8_t d = 0; d < ndim; ++d) {
        const auto size = r.pod<int64_t>("a tensor's size");
        if (size < 0) malformed(detail::concat("negative tensor size ", size));
        if (size != 0 && bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(size))
          malformed("tensor sizes overflow 64 bits");
        bytes *= static_cast<uint64_t>(size);
        t.sizes.push_back(size);
      }
      t.frame = r.pod<uint32_t>("a tensor's frame index");
      if (t.frame >= tensors.used.size()) {
        malformed(
            detail::concat("tensor frame ", t.frame, " does not exist (", tensors.used.size(), " tensor frames)"));
      }
      if (tensors.used[t.frame]) malformed(detail::concat("tensor frame ", t.frame, " used twice"));
      tensors.used[t.frame] = true;
      const size_t have = (*tensors.frames)[t.frame].size;
      if (bytes != have) {
        malformed(detail::concat("tensor of ", bytes, " bytes described, but its frame has ", have));
      }
      break;
    }
    case Tag::RRef: {
      RRefMeta& m = v.rref;
      m.owner = r.pod<int32_t>("an RRef's owner");
      m.rref_id = r.pod<int64_t>("an RRef's id");
      m.fork_id = r.pod<int64_t>("an RRef's fork id");
      m.parent = r.pod<int32_t>("an RRef's parent");
      if (m.owner < 0 || m.parent < 0 || m.rref_id < 0 || m.fork_id < -1)
        malformed("RRef with a negative owner, parent or id");
      break;
    }
  }
  return v;
}

bool is_int(const WireValue& v) { return v.tag == Tag::Int; }

// The shape each message type's body must have.
void check_body_shape(MessageType type, const WireValue& body) {
  auto fail = [&](const char* expected) {
    malformed(detail::concat(message_type_name(type), " body must be ", expected));
  };
  const auto& l = body.list;
  switch (type) {
    case MessageType::Call:
      if (body.tag != Tag::List || l.size() != 2 || l[0].tag != Tag::String || l[1].tag != Tag::List)
        fail("[name, [args]]");
      break;
    case MessageType::RemoteCall:
      if (body.tag != Tag::List || l.size() != 4 || l[0].tag != Tag::String || l[1].tag != Tag::List || !is_int(l[2]) ||
          !is_int(l[3]))
        fail("[name, [args], rref id, fork id]");
      break;
    case MessageType::Error:
      if (body.tag != Tag::String) fail("a string");
      break;
    case MessageType::RRefFetch:
      if (body.tag != Tag::List || l.size() != 1 || !is_int(l[0])) fail("[rref id]");
      break;
    case MessageType::RRefUserDelete:
    case MessageType::RRefForkRequest:
      if (body.tag != Tag::List || l.size() != 2 || !is_int(l[0]) || !is_int(l[1])) fail("[rref id, fork id]");
      break;
    case MessageType::RRefChildAccept:
      if (body.tag != Tag::List || l.size() != 1 || !is_int(l[0])) fail("[fork id]");
      break;
    case MessageType::Ack:
      if (body.tag != Tag::None) fail("empty");
      break;
    case MessageType::Response: break;
  }
}

}  // namespace

const char* message_type_name(MessageType type) {
  switch (type) {
    case MessageType::Call: return "call";
    case MessageType::Response: return "response";
    case MessageType::Error: return "error";
    case MessageType::RemoteCall: return "remote_call";
    case MessageType::RRefFetch: return "rref_fetch";
    case MessageType::RRefUserDelete: return "rref_user_delete";
    case MessageType::RRefForkRequest: return "rref_fork_request";
    case MessageType::RRefChildAccept: return "rref_child_accept";
    case MessageType::Ack: return "ack";
  }
  return "unknown";
}

DecodedMessage decode_message(const std::vector<FrameView>& frames, std::string_view token) {
  if (frames.empty()) throw WireError(Rejection::Token, "message without frames");
  // The token first: a stranger's message is refused before any of it is parsed.
  // Compared in constant time so the comparison does not leak the token byte by byte.
  const FrameView& t = frames[0];
  bool token_ok = t.size == token.size();
  uint8_t diff = 0;
  for (size_t i = 0; token_ok && i < t.size; ++i)
    diff |= static_cast<uint8_t>(t.data[i] ^ static_cast<uint8_t>(token[i]));
  if (!token_ok || diff != 0) throw WireError(Rejection::Token, "message without the job's token");

  if (frames.size() < 3) malformed(detail::concat("message of ", frames.size(), " frames; at least 3 needed"));
  if (frames[1].size != sizeof(Header))
    malformed(detail::concat("header of ", frames[1].size, " bytes; ", sizeof(Header), " expected"));
  DecodedMessage m;
  std::memcpy(&m.header, frames[1].data, sizeof(Header));
  const Header& h = m.header;
  if (h.magic != kMagic) malformed("bad magic number");
  if (h.version != kVersion) malformed(detail::concat("wire version ", h.version, "; this build speaks ", kVersion));
  if (h.type == 0 || h.type > kMaxMessageType) malformed(detail::concat("unknown message type ", int{h.type}));
  if (h.src < 0 || h.dst < 0) malformed("negative worker id");
  if (h.flags & ~kFlagAutograd) malformed(detail::concat("unknown header flags 0x", std::hex, int{h.flags}));
  if (h.ctx_id < -1) malformed(detail::concat("context id ", h.ctx_id, " (-1 or an id expected)"));
  if (h.num_tensors > kMaxTensors)
    malformed(detail::concat(h.num_tensors, " tensor frames claimed; at most ", kMaxTensors));
  if (frames.size() != 3 + static_cast<size_t>(h.num_tensors)) {
    malformed(
        detail::concat("header claims ", h.num_tensors, " tensor frames but the message has ", frames.size() - 3));
  }
  m.tensor_frames.assign(frames.begin() + 3, frames.end());
  TensorUse use{std::vector<bool>(h.num_tensors, false), &m.tensor_frames};
  BodyReader r(frames[2].data, frames[2].size, Truncated{});
  m.body = read_value(r, 0, use);
  if (r.left() != 0) malformed(detail::concat(r.left(), " bytes after the body's value"));
  for (size_t k = 0; k < use.used.size(); ++k)
    if (!use.used[k]) malformed(detail::concat("tensor frame ", k, " is not described by the body"));
  check_body_shape(static_cast<MessageType>(h.type), m.body);
  return m;
}

void BodyWriter::boolean(bool v) {
  tag(Tag::Bool);
  out_.push_back(v ? 1 : 0);
}
void BodyWriter::integer(int64_t v) {
  tag(Tag::Int);
  pod(v);
}
void BodyWriter::real(double v) {
  tag(Tag::Double);
  pod(v);
}
void BodyWriter::string(std::string_view v) {
  tag(Tag::String);
  pod(static_cast<uint32_t>(v.size()));
  out_.append(v);
}
void BodyWriter::list(uint32_t count) {
  tag(Tag::List);
  pod(count);
}
void BodyWriter::tensor(uint8_t dtype, bool requires_grad, const std::vector<int64_t>& sizes, uint32_t frame) {
  tag(Tag::Tensor);
  out_.push_back(static_cast<char>(dtype));
  out_.push_back(requires_grad ? 1 : 0);
  out_.push_back(static_cast<char>(sizes.size()));
  for (int64_t s : sizes)
    pod(s);
  pod(frame);
}
void BodyWriter::rref(const RRefMeta& r) {
  tag(Tag::RRef);
  pod(r.owner);
  pod(r.rref_id);
  pod(r.fork_id);
  pod(r.parent);
}

std::string format_id(int64_t id) { return detail::concat("(", id_worker(id), ", ", id_local(id), ")"); }

}  // namespace ddpscope::rpc::wire
