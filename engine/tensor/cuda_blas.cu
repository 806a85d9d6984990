// GEMM on cuBLAS. cuBLAS is column-major: a row-major C = A B is computed as the
// column-major C^T = B^T A^T, which reads the same memory with the operands swapped.
#include <cublas_v2.h>

#include <mutex>

#include "cublas_library.h"
#include "cuda_common.cuh"
#include "cuda_kernels.h"
#include "matrix_layout.h"

namespace ddpscope::cuda_kernels {
namespace {

struct Operand {
  Tensor storage;
  cublasOperation_t op = CUBLAS_OP_N;
  int ld = 1;
};

Operand as_operand(const Tensor& t) {
  const MatrixLayout l = matrix_layout(t);
  if (!l.direct) return {t.contiguous(), CUBLAS_OP_N, l.ld};
  return {t, l.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, l.ld};
}

cublasHandle_t handle_for(int device) {
  static std::mutex mutex;
  static cublasHandle_t handles[64] = {};
  std::lock_guard<std::mutex> lock(mutex);
  DDPSCOPE_CHECK(device >= 0 && device < 64, "cuBLAS: device index ", device, " out of range");
  if (!handles[device]) {
    CUDA_CHECK(cudaSetDevice(device));
    const cublasStatus_t st = cublas_library().create(&handles[device]);
    DDPSCOPE_CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasCreate failed on cuda:", device, " (status ",
                   static_cast<int>(st), ")");
  }
  return handles[device];
}

void check_cublas(cublasStatus_t st, const char* what) {
  DDPSCOPE_CHECK(st == CUBLAS_STATUS_SUCCESS, what, " failed with cuBLAS status ", static_cast<int>(st));
}

}  // namespace

void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta) {
  const int M = static_cast<int>(a.size(0)), N = static_cast<int>(b.size(1)), K = static_cast<int>(a.size(1));
  if (M == 0 || N == 0) return;
  with_gemm_output(c, K, beta, [&](const Tensor& out, int ldc) {
    const Operand A = as_operand(a), B = as_operand(b);
    cublasHandle_t h = handle_for(a.device().index);
    if (a.dtype() == DType::F32) {
      const float al = static_cast<float>(alpha), be = static_cast<float>(beta);
      check_cublas(cublas_library().sgemm(h, B.op, A.op, N, M, K, &al, static_cast<const float*>(B.storage.raw_data()),
                                          B.ld, static_cast<const float*>(A.storage.raw_data()), A.ld, &be,
                                          static_cast<float*>(out.raw_data()), ldc),
                   "cublasSgemm");
    } else if (a.dtype() == DType::F64) {
      check_cublas(
          cublas_library().dgemm(h, B.op, A.op, N, M, K, &alpha, static_cast<const double*>(B.storage.raw_data()), B.ld,
                                 static_cast<const double*>(A.storage.raw_data()), A.ld, &beta,
                                 static_cast<double*>(out.raw_data()), ldc),
          "cublasDgemm");
    } else {
      throw DDPSCOPE_ERROR("gemm: dtype ", dtype_name(a.dtype()), " is not supported; use f32 or f64");
    }
  });
}

}  // namespace ddpscope::cuda_kernels
