// How a 2-D strided tensor can be handed to a row-major BLAS call without copying:
// as a plain matrix, as the transpose of one, or not at all. Shared by the OpenBLAS and
// cuBLAS paths so both accept the same views.
#pragma once

#include <algorithm>

#include "kernels.h"
#include "tensor.h"

namespace ddpscope {

struct MatrixLayout {
  bool direct = false;      // false: copy to a contiguous matrix first
  bool transposed = false;  // the memory holds the transpose, row-major
  int ld = 1;               // leading dimension of the memory as row-major
};

inline MatrixLayout matrix_layout(const Tensor& t) {
  const int64_t rows = t.size(0), cols = t.size(1), s0 = t.stride(0), s1 = t.stride(1);
  if ((cols == 1 || s1 == 1) && (rows == 1 || s0 >= cols)) {
    return {true, false, static_cast<int>(std::max<int64_t>({rows > 1 ? s0 : cols, cols, 1}))};
  }
  if ((rows == 1 || s0 == 1) && (cols == 1 || s1 >= rows)) {
    return {true, true, static_cast<int>(std::max<int64_t>({cols > 1 ? s1 : rows, rows, 1}))};
  }
  return {false, false, static_cast<int>(std::max<int64_t>(cols, 1))};
}

// An output matrix must be plain row-major (not transposed) to be written in place.
inline bool writable_in_place(const Tensor& c) {
  const MatrixLayout l = matrix_layout(c);
  return l.direct && !l.transposed;
}

// Calls blas(out, ldc) with an output BLAS can write: c itself when its layout allows,
// else a temporary (holding c's values when beta != 0) copied back afterwards. With an
// empty inner dimension there is no product: c is only scaled by beta.
template <typename Blas>
void with_gemm_output(const Tensor& c, int64_t inner, double beta, Blas&& blas) {
  const bool direct = writable_in_place(c);
  Tensor out = direct ? c : Tensor::empty(c.sizes(), c.dtype(), c.device());
  if (!direct && beta != 0.0) kernels::copy(out, c);
  if (inner == 0) {
    kernels::scale_(out, beta);
  } else {
    blas(out, matrix_layout(out).ld);
  }
  if (!direct) kernels::copy(c, out);
  c.bump_version();
}

}  // namespace ddpscope
