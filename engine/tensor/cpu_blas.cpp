// Matrix products through OpenBLAS. Strided views that are plain or transposed
// matrices go to BLAS directly (with the transpose flag), so x @ W^T costs no copy.
#include <cblas.h>

#include "cuda_dispatch.h"
#include "kernels.h"
#include "matrix_layout.h"

namespace ddpscope::kernels {
namespace {

struct BlasOperand {
  Tensor storage;  // what BLAS reads (the tensor itself or a contiguous copy)
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int ld = 1;
};

BlasOperand as_blas_operand(const Tensor& t) {
  const MatrixLayout l = matrix_layout(t);
  if (!l.direct) return {t.clone(), CblasNoTrans, l.ld};
  return {t, l.transposed ? CblasTrans : CblasNoTrans, l.ld};
}

}  // namespace

void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta) {
  DDPSCOPE_CHECK(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "gemm: expected 2-D operands, got ", a.describe(), ", ",
                 b.describe(), ", ", c.describe());
  DDPSCOPE_CHECK(a.size(1) == b.size(0) && c.size(0) == a.size(0) && c.size(1) == b.size(1),
                 "gemm: shapes do not chain: ", a.describe(), " @ ", b.describe(), " -> ", c.describe());
  DDPSCOPE_CHECK(a.dtype() == b.dtype() && a.dtype() == c.dtype(), "gemm: dtypes differ: ", a.describe(), ", ",
                 b.describe(), ", ", c.describe());
  DDPSCOPE_CHECK(a.device() == b.device() && a.device() == c.device(), "gemm: operands on different devices");
  DDPSCOPE_ROUTE_CUDA(a, gemm(a, b, c, alpha, beta));
  const int M = static_cast<int>(a.size(0)), N = static_cast<int>(b.size(1)), K = static_cast<int>(a.size(1));
  if (M == 0 || N == 0) return;
  const BlasOperand A = as_blas_operand(a), B = as_blas_operand(b);
  with_gemm_output(c, K, beta, [&](const Tensor& out, int ldc) {
    if (a.dtype() == DType::F32) {
      cblas_sgemm(CblasRowMajor, A.trans, B.trans, M, N, K, static_cast<float>(alpha), A.storage.data<float>(), A.ld,
                  B.storage.data<float>(), B.ld, static_cast<float>(beta), out.data<float>(), ldc);
    } else if (a.dtype() == DType::F64) {
      cblas_dgemm(CblasRowMajor, A.trans, B.trans, M, N, K, alpha, A.storage.data<double>(), A.ld,
                  B.storage.data<double>(), B.ld, beta, out.data<double>(), ldc);
    } else {
      throw DDPSCOPE_ERROR("gemm: dtype ", dtype_name(a.dtype()), " is not supported; use f32 or f64");
    }
  });
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (a.dim() == 2 && b.dim() == 2) {
    Tensor out = Tensor::empty({a.size(0), b.size(1)}, a.dtype(), a.device());
    gemm(a, b, out);
    return out;
  }
  if (a.dim() == 3 && b.dim() == 3) {
    DDPSCOPE_CHECK(a.size(0) == b.size(0), "matmul: batch sizes differ: ", a.describe(), " @ ", b.describe());
    const int64_t B = a.size(0);
    Tensor out = Tensor::empty({B, a.size(1), b.size(2)}, a.dtype(), a.device());
    for (int64_t i = 0; i < B; ++i) {
      gemm(a.as_strided({a.size(1), a.size(2)}, {a.stride(1), a.stride(2)}, a.storage_offset() + i * a.stride(0)),
           b.as_strided({b.size(1), b.size(2)}, {b.stride(1), b.stride(2)}, b.storage_offset() + i * b.stride(0)),
           out.as_strided({out.size(1), out.size(2)}, {out.stride(1), out.stride(2)}, i * out.stride(0)));
    }
    return out;
  }
  throw DDPSCOPE_ERROR("matmul: supported are 2-D @ 2-D and 3-D @ 3-D (batched); got ", a.describe(), " @ ",
                       b.describe());
}

}  // namespace ddpscope::kernels
