// Walks every element of an N-d shape, giving fn the element offset of each operand from
// its own strides (0 for broadcast dimensions). The innermost dimension is a plain loop.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tensor.h"

namespace ddpscope::kernels {

template <size_t N, typename Fn>
void for_each_offset(const Shape& shape, const std::array<const Shape*, N>& strides, std::array<int64_t, N> base,
                     Fn&& fn) {
  const size_t nd = shape.size();
  if (nd == 0) {
    fn(base);
    return;
  }
  for (int64_t s : shape) {
    if (s == 0) return;
  }
  const int64_t inner = shape[nd - 1];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k)
    inner_stride[k] = (*strides[k])[nd - 1];
  std::vector<int64_t> index(nd, 0);
  std::array<int64_t, N> off = base;
  while (true) {
    std::array<int64_t, N> o = off;
    for (int64_t i = 0; i < inner; ++i) {
      fn(o);
      for (size_t k = 0; k < N; ++k)
        o[k] += inner_stride[k];
    }
    // Advance the outer index like an odometer.
    size_t d = nd - 1;
    while (true) {
      if (d == 0) return;
      --d;
      ++index[d];
      for (size_t k = 0; k < N; ++k)
        off[k] += (*strides[k])[d];
      if (index[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k)
        off[k] -= (*strides[k])[d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace ddpscope::kernels
