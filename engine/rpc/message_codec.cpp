#include "message_codec.h"

#include <cstring>

namespace ddpscope::rpc {

size_t OutgoingMessage::bytes() const {
  size_t n = sizeof(wire::Header) + body.size();
  for (const auto& t : tensors)
    n += t.nbytes();
  return n;
}

void encode_value(const Value& v, wire::BodyWriter& body, std::vector<Tensor>& tensors,
                  const std::function<wire::RRefMeta(const RRef&)>& fork_rref) {
  if (v.is_none()) {
    body.none();
  } else if (v.is_bool()) {
    body.boolean(v.to_bool());
  } else if (v.is_int()) {
    body.integer(v.to_int());
  } else if (v.is_double()) {
    body.real(v.to_double());
  } else if (v.is_string()) {
    body.string(v.str());
  } else if (v.is_list()) {
    const auto& l = v.list();
    body.list(static_cast<uint32_t>(l.size()));
    for (const auto& item : l)
      encode_value(item, body, tensors, fork_rref);
  } else if (v.is_tensor()) {
    const Tensor& t = v.tensor();
    DDPSCOPE_CHECK(t.defined(), "cannot send an undefined tensor");
    DDPSCOPE_CHECK(t.device().is_cpu(), "RPC sends CPU tensors; ", t.describe(),
                   " is on the GPU: move it to the CPU first (.to(Device::cpu()))");
    DDPSCOPE_CHECK(t.dim() <= static_cast<int64_t>(wire::kMaxDims), "cannot send ", t.describe(),
                   ": RPC tensors have at most ", wire::kMaxDims, " dimensions");
    body.tensor(static_cast<uint8_t>(t.dtype()), t.requires_grad(), t.sizes(), static_cast<uint32_t>(tensors.size()));
    // Compact: a non-contiguous view is copied once; a contiguous one sends its slice.
    tensors.push_back(t.is_contiguous() ? t.detach() : t.detach().contiguous());
  } else {
    body.rref(fork_rref(v.rref()));
  }
}

Value decode_value(const wire::WireValue& w, const std::vector<IncomingFrame>& frames,
                   const std::function<RRef(const wire::RRefMeta&)>& resolve_rref) {
  switch (w.tag) {
    case wire::Tag::None: return Value();
    case wire::Tag::Bool: return Value(w.b);
    case wire::Tag::Int: return Value(w.i);
    case wire::Tag::Double: return Value(w.d);
    case wire::Tag::String: return Value(w.s);
    case wire::Tag::List: {
      ValueList l;
      l.reserve(w.list.size());
      for (const auto& item : w.list)
        l.push_back(decode_value(item, frames, resolve_rref));
      return Value(std::move(l));
    }
    case wire::Tag::Tensor: {
      const auto& m = w.tensor;
      const auto dtype = static_cast<DType>(m.dtype);
      const IncomingFrame& frame = frames.at(m.frame);
      const size_t n = frame.size;
      std::shared_ptr<Storage> storage;
      if (n == 0 || !frame.owner || reinterpret_cast<uintptr_t>(frame.data) % element_size(dtype) != 0) {
        storage = std::make_shared<Storage>(n, Device{});
        if (n) std::memcpy(storage->data(), frame.data, n);
      } else {
        // The storage adopts the frame: it keeps the received bytes alive, no copy.
        storage = std::make_shared<Storage>(const_cast<uint8_t*>(frame.data), n, [keep = frame.owner] {});
      }
      auto impl = std::make_shared<TensorImpl>();
      impl->storage = std::move(storage);
      impl->sizes = m.sizes;
      impl->strides = contiguous_strides(m.sizes);
      impl->dtype = dtype;
      Tensor t(std::move(impl));
      if (m.requires_grad && is_floating(dtype)) t.set_requires_grad(true);
      return Value(std::move(t));
    }
    case wire::Tag::RRef: return Value(resolve_rref(w.rref));
  }
  return Value();
}

OutgoingFrame tensor_frame(const Tensor& t, bool may_alias) {
  const size_t n = t.nbytes();
  if (n < kZeroCopyBytes || !may_alias) return {t.raw_data(), n, nullptr};
  // The transport may read the bytes after send() returns; the storage lives until then.
  return {t.raw_data(), n, t.storage()};
}

}  // namespace ddpscope::rpc
