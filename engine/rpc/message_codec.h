// Values to frames and back. Tensor bytes never pass through the body: each tensor is
// its own frame, sent straight from its storage (contiguous views as the slice they
// view, other views after one compacting copy) and received into a storage that adopts
// the frame's buffer (or takes one copy when the buffer is misaligned for the dtype).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rref.h"
#include "transport.h"
#include "value.h"
#include "wire_format.h"

namespace ddpscope::rpc {

// A message ready to send: its header (msg id, type, ...), body and tensor frames.
struct OutgoingMessage {
  wire::Header header;
  std::string body;
  std::vector<Tensor> tensors;  // contiguous; frame k is tensors[k]'s bytes
  size_t bytes() const;         // header + body + tensor bytes
};

// Appends `value` to `body`, collecting its tensors; RRefs become the fork `fork_rref`
// makes for the destination.
void encode_value(const Value& value, wire::BodyWriter& body, std::vector<Tensor>& tensors,
                  const std::function<wire::RRefMeta(const RRef&)>& fork_rref);

// The Value of a decoded body; tensors adopt `frames` (kept alive by their storage).
Value decode_value(const wire::WireValue& wire, const std::vector<IncomingFrame>& frames,
                   const std::function<RRef(const wire::RRefMeta&)>& resolve_rref);

// Tensor frames at least this large are sent without a copy, when safe.
inline constexpr size_t kZeroCopyBytes = 64 * 1024;
// The frame of tensor `t`. `may_alias`: nothing else can write its bytes while the
// transport sends them, so a large one is handed over without a copy.
OutgoingFrame tensor_frame(const Tensor& t, bool may_alias);

}  // namespace ddpscope::rpc
