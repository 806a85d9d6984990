// Copies (with dtype conversion and arbitrary strides) and fills on the CPU.
#include <cstring>

#include "cuda_dispatch.h"
#include "kernels.h"
#include "strided_loop.h"

namespace ddpscope::kernels {
namespace {

// Element access through double keeps conversions in one place. f16/bf16 go through
// float, which is exact for them.
template <typename T>
struct Element {
  static double load(const T* p) { return static_cast<double>(*p); }
  static void store(T* p, double v) { *p = static_cast<T>(v); }
};
template <>
struct Element<Half> {
  static double load(const Half* p) { return half_bits_to_float(p->bits); }
  static void store(Half* p, double v) { p->bits = float_to_half_bits(static_cast<float>(v)); }
};
template <>
struct Element<BFloat16> {
  static double load(const BFloat16* p) { return bf16_bits_to_float(p->bits); }
  static void store(BFloat16* p, double v) { p->bits = float_to_bf16_bits(static_cast<float>(v)); }
};

template <typename Fn>
decltype(auto) dispatch_any(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::F32: return fn.template operator()<float>();
    case DType::F64: return fn.template operator()<double>();
    case DType::F16: return fn.template operator()<Half>();
    case DType::BF16: return fn.template operator()<BFloat16>();
    case DType::I64: return fn.template operator()<int64_t>();
  }
  throw DDPSCOPE_ERROR("unknown dtype");
}

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  DDPSCOPE_CHECK(dst.sizes() == src.sizes(), "copy: source ", src.describe(), " and destination ", dst.describe(),
                 " differ in shape");
  DDPSCOPE_CHECK(dst.device() == src.device(), "copy: source on ", src.device().str(), " and destination on ",
                 dst.device().str(), "; use Tensor::to(Device)");
  DDPSCOPE_ROUTE_CUDA(dst, copy(dst, src));
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    std::memmove(dst.raw_data(), src.raw_data(), dst.nbytes());
    return;
  }
  dispatch_any(dst.dtype(), [&]<typename D>() {
    dispatch_any(src.dtype(), [&]<typename S>() {
      D* out = static_cast<D*>(dst.raw_data());
      const S* in = static_cast<const S*>(src.raw_data());
      if (dst.is_contiguous() && src.is_contiguous()) {
        const int64_t n = dst.numel();
        if constexpr (std::is_arithmetic_v<D> && std::is_arithmetic_v<S>) {
          for (int64_t i = 0; i < n; ++i)
            out[i] = static_cast<D>(in[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            Element<D>::store(out + i, Element<S>::load(in + i));
        }
        return;
      }
      for_each_offset<2>(dst.sizes(), {&dst.strides(), &src.strides()}, {0, 0}, [&](const std::array<int64_t, 2>& o) {
        Element<D>::store(out + o[0], Element<S>::load(in + o[1]));
      });
    });
  });
}

void fill(const Tensor& dst, double value) {
  DDPSCOPE_ROUTE_CUDA(dst, fill(dst, value));
  if (dst.numel() == 0) return;
  dispatch_any(dst.dtype(), [&]<typename D>() {
    D v;
    Element<D>::store(&v, value);
    D* out = static_cast<D*>(dst.raw_data());
    if (dst.is_contiguous()) {
      std::fill(out, out + dst.numel(), v);
      return;
    }
    for_each_offset<1>(dst.sizes(), {&dst.strides()}, {0}, [&](const std::array<int64_t, 1>& o) { out[o[0]] = v; });
  });
}

}  // namespace ddpscope::kernels
