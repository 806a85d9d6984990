// Element types. f32 is the compute type, f64 is used by gradient checks, f16 and bf16
// are storage formats (gradient compression), i64 holds indices.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "ddpscope/error.h"

namespace ddpscope {

enum class DType : uint8_t { F32, F64, F16, BF16, I64 };

size_t element_size(DType dtype);
const char* dtype_name(DType dtype);
DType dtype_from_name(const std::string& name);  // "f32", "float32", ...; throws on unknown
inline bool is_floating(DType d) { return d != DType::I64; }
// Types the CPU and CUDA kernels compute in; the others are converted first.
inline bool is_compute_type(DType d) { return d == DType::F32 || d == DType::F64; }

// IEEE half and bfloat16 as 16-bit patterns. Conversions round to nearest even.
struct Half {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};

uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::F32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::F64;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::I64;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::F16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::BF16;
};

// Calls fn.template operator()<T>() with T = float or double; other dtypes are an error
// naming the operation.
template <typename Fn>
decltype(auto) dispatch_compute(DType dtype, const char* op, Fn&& fn) {
  switch (dtype) {
    case DType::F32: return fn.template operator()<float>();
    case DType::F64: return fn.template operator()<double>();
    default:
      throw DDPSCOPE_ERROR(op, ": dtype ", dtype_name(dtype), " is a storage type; convert with to(DType::F32) first");
  }
}

}  // namespace ddpscope
