// Shared pieces of the .cu files: error checking, launch sizes, and strided indexing of
// tensors with up to kMaxDims dimensions inside kernels.
#pragma once

#include <cuda_runtime.h>

#include "ddpscope/error.h"
#include "tensor.h"

#define CUDA_CHECK(expr)                                                                \
  do {                                                                                  \
    const cudaError_t err_ = (expr);                                                    \
    if (err_ != cudaSuccess) {                                                          \
      throw DDPSCOPE_ERROR("CUDA call ", #expr, " failed: ", cudaGetErrorString(err_)); \
    }                                                                                   \
  } while (0)

namespace ddpscope::cuda_kernels {

constexpr int kMaxDims = 8;
constexpr int kThreads = 256;

inline unsigned int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

inline void check_launch(const char* kernel) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw DDPSCOPE_ERROR("CUDA kernel ", kernel, " failed to launch: ", cudaGetErrorString(err));
  }
}

// Maps a row-major linear index over `sizes` to an element offset through `strides`.
struct Indexer {
  int nd = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];

  __device__ int64_t offset(int64_t linear) const {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
      off += i * strides[d];
    }
    return off;
  }
};

// Indexer for `t` viewed with `shape` (broadcast dimensions get stride 0).
inline Indexer make_indexer(const Tensor& t, const Shape& shape) {
  const Tensor e = t.sizes() == shape ? t : t.expand(shape);
  DDPSCOPE_CHECK(e.dim() <= kMaxDims, "CUDA kernels support up to ", kMaxDims, " dimensions, got ", e.describe());
  Indexer ix;
  ix.nd = static_cast<int>(e.dim());
  for (int d = 0; d < ix.nd; ++d) {
    ix.sizes[d] = e.sizes()[d];
    ix.strides[d] = e.strides()[d];
  }
  return ix;
}

// Calls fn(T{}) with T = float or double; storage dtypes are an error naming the op.
template <typename Fn>
void dispatch_float(DType dtype, const char* op, Fn&& fn) {
  switch (dtype) {
    case DType::F32: fn(float{}); return;
    case DType::F64: fn(double{}); return;
    default:
      throw DDPSCOPE_ERROR(op, ": dtype ", dtype_name(dtype), " is a storage type; convert with to(DType::F32) first");
  }
}

#define CUDA_GRID_LOOP(i, n)                                                             \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

}  // namespace ddpscope::cuda_kernels
