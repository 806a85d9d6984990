// Elementwise CUDA kernels: copies with dtype conversion, fills, broadcasting binary
// ops, unary functions and derivative helpers. One grid-stride kernel per shape of
// work; operands are addressed through Indexers, so any strides work.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace ddpscope::cuda_kernels {
namespace {

struct HalfTag {};
struct BF16Tag {};

template <typename T>
struct Elem {
  using Storage = T;
  __device__ static double load(const Storage* p) { return static_cast<double>(*p); }
  __device__ static void store(Storage* p, double v) { *p = static_cast<T>(v); }
};
template <>
struct Elem<HalfTag> {
  using Storage = unsigned short;
  __device__ static double load(const Storage* p) { return __half2float(__ushort_as_half(*p)); }
  __device__ static void store(Storage* p, double v) { *p = __half_as_ushort(__float2half_rn(static_cast<float>(v))); }
};
template <>
struct Elem<BF16Tag> {
  using Storage = unsigned short;
  __device__ static double load(const Storage* p) { return __bfloat162float(__ushort_as_bfloat16(*p)); }
  __device__ static void store(Storage* p, double v) {
    *p = __bfloat16_as_ushort(__float2bfloat16_rn(static_cast<float>(v)));
  }
};

template <typename Fn>
void dispatch_any(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::F32: fn(float{}); return;
    case DType::F64: fn(double{}); return;
    case DType::I64: fn(int64_t{}); return;
    case DType::F16: fn(HalfTag{}); return;
    case DType::BF16: fn(BF16Tag{}); return;
  }
}

template <typename D, typename S>
__global__ void copy_kernel(typename Elem<D>::Storage* dst, Indexer di, const typename Elem<S>::Storage* src,
                            Indexer si, int64_t n) {
  CUDA_GRID_LOOP(i, n) { Elem<D>::store(dst + di.offset(i), Elem<S>::load(src + si.offset(i))); }
}

template <typename D>
__global__ void fill_kernel(typename Elem<D>::Storage* dst, Indexer di, double v, int64_t n) {
  CUDA_GRID_LOOP(i, n) { Elem<D>::store(dst + di.offset(i), v); }
}

template <typename T>
__device__ T apply_binary(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::Add: return x + y;
    case BinaryOp::Sub: return x - y;
    case BinaryOp::Mul: return x * y;
    case BinaryOp::Div: return x / y;
  }
  return T(0);
}

template <typename T>
__global__ void binary_kernel(T* out, Indexer oi, const T* a, Indexer ai, const T* b, Indexer bi, BinaryOp op, T alpha,
                              int64_t n) {
  CUDA_GRID_LOOP(i, n) {
    const T y = b[bi.offset(i)];
    out[oi.offset(i)] = apply_binary(op, a[ai.offset(i)], alpha * y);
  }
}

template <typename T>
__device__ T apply_unary(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::Neg: return -x;
    case UnaryOp::Exp: return exp(x);
    case UnaryOp::Log: return log(x);
    case UnaryOp::Sqrt: return sqrt(x);
    case UnaryOp::Tanh: return tanh(x);
    case UnaryOp::Sigmoid: return T(1) / (T(1) + exp(-x));
    case UnaryOp::Relu: return x > T(0) ? x : T(0);
    case UnaryOp::Gelu: return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
    case UnaryOp::Square: return x * x;
    case UnaryOp::Abs: return x < T(0) ? -x : x;
  }
  return x;
}

enum class Derivative { Relu, Gelu, Tanh, Sigmoid, Pow, Affine, PowValue };

template <typename T>
__device__ T apply_derivative(Derivative d, T g, T s, T p, T q) {
  switch (d) {
    case Derivative::Relu: return s > T(0) ? g : T(0);
    case Derivative::Gelu: {
      const T cdf = T(0.5) * (T(1) + erf(s * T(0.70710678118654752440)));
      const T pdf = T(0.39894228040143267794) * exp(T(-0.5) * s * s);
      return g * (cdf + s * pdf);
    }
    case Derivative::Tanh: return g * (T(1) - s * s);
    case Derivative::Sigmoid: return g * s * (T(1) - s);
    case Derivative::Pow: return g * p * pow(s, p - T(1));
    case Derivative::Affine: return s * p + q;  // g unused
    case Derivative::PowValue: return pow(s, p);
  }
  return g;
}

template <typename T>
__global__ void unary_kernel(T* out, const T* in, Indexer ii, UnaryOp op, int64_t n) {
  CUDA_GRID_LOOP(i, n) { out[i] = apply_unary(op, in[ii.offset(i)]); }
}

template <typename T>
__global__ void derivative_kernel(T* out, Indexer oi, const T* g, Indexer gi, const T* s, Indexer si, Derivative d, T p,
                                  T q, int64_t n) {
  CUDA_GRID_LOOP(i, n) { out[oi.offset(i)] = apply_derivative(d, g ? g[gi.offset(i)] : T(0), s[si.offset(i)], p, q); }
}

// out = f(grad, saved) elementwise; grad may be undefined for value-only maps.
Tensor derivative(const Tensor& grad, const Tensor& saved, Derivative d, double p, double q, const char* op) {
  if (grad.defined()) {
    DDPSCOPE_CHECK(grad.sizes() == saved.sizes(), op, ": shapes ", grad.describe(), " and ", saved.describe(),
                   " differ");
  }
  Tensor out = Tensor::empty(saved.sizes(), saved.dtype(), saved.device());
  const int64_t n = out.numel();
  if (n == 0) return out;
  dispatch_float(saved.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    derivative_kernel<T><<<blocks_for(n), kThreads>>>(
        static_cast<T*>(out.raw_data()), make_indexer(out, out.sizes()),
        grad.defined() ? static_cast<const T*>(grad.raw_data()) : nullptr,
        grad.defined() ? make_indexer(grad, grad.sizes()) : Indexer{}, static_cast<const T*>(saved.raw_data()),
        make_indexer(saved, saved.sizes()), d, static_cast<T>(p), static_cast<T>(q), n);
  });
  check_launch(op);
  return out;
}

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const Indexer di = make_indexer(dst, dst.sizes()), si = make_indexer(src, dst.sizes());
  dispatch_any(dst.dtype(), [&](auto dtag) {
    using D = decltype(dtag);
    dispatch_any(src.dtype(), [&](auto stag) {
      using S = decltype(stag);
      copy_kernel<D, S><<<blocks_for(n), kThreads>>>(static_cast<typename Elem<D>::Storage*>(dst.raw_data()), di,
                                                     static_cast<const typename Elem<S>::Storage*>(src.raw_data()), si,
                                                     n);
    });
  });
  check_launch("copy");
}

void fill(const Tensor& dst, double value) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  dispatch_any(dst.dtype(), [&](auto tag) {
    using D = decltype(tag);
    fill_kernel<D><<<blocks_for(n), kThreads>>>(static_cast<typename Elem<D>::Storage*>(dst.raw_data()),
                                                make_indexer(dst, dst.sizes()), value, n);
  });
  check_launch("fill");
}

Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op) {
  Tensor out = Tensor::empty(kernels::broadcast_shapes(a.sizes(), b.sizes()), a.dtype(), a.device());
  const int64_t n = out.numel();
  if (n == 0) return out;
  dispatch_float(a.dtype(), "binary op", [&](auto tag) {
    using T = decltype(tag);
    binary_kernel<T><<<blocks_for(n), kThreads>>>(
        static_cast<T*>(out.raw_data()), make_indexer(out, out.sizes()), static_cast<const T*>(a.raw_data()),
        make_indexer(a, out.sizes()), static_cast<const T*>(b.raw_data()), make_indexer(b, out.sizes()), op, T(1), n);
  });
  check_launch("binary");
  return out;
}

void add_(const Tensor& self, const Tensor& other, double alpha) {
  const int64_t n = self.numel();
  if (n == 0) return;
  dispatch_float(self.dtype(), "add_", [&](auto tag) {
    using T = decltype(tag);
    const Indexer si = make_indexer(self, self.sizes());
    binary_kernel<T>
        <<<blocks_for(n), kThreads>>>(static_cast<T*>(self.raw_data()), si, static_cast<const T*>(self.raw_data()), si,
                                      static_cast<const T*>(other.raw_data()), make_indexer(other, self.sizes()),
                                      BinaryOp::Add, static_cast<T>(alpha), n);
  });
  check_launch("add_");
  self.bump_version();
}

void scale_(const Tensor& self, double factor) {
  const int64_t n = self.numel();
  if (n == 0) return;
  dispatch_float(self.dtype(), "scale_", [&](auto tag) {
    using T = decltype(tag);
    const Indexer si = make_indexer(self, self.sizes());
    // In place: x = x * factor, through the affine map.
    derivative_kernel<T><<<blocks_for(n), kThreads>>>(static_cast<T*>(self.raw_data()), si, nullptr, Indexer{},
                                                      static_cast<const T*>(self.raw_data()), si, Derivative::Affine,
                                                      static_cast<T>(factor), T(0), n);
  });
  check_launch("scale_");
  self.bump_version();
}

Tensor affine(const Tensor& a, double scale, double shift) {
  return derivative(Tensor(), a, Derivative::Affine, scale, shift, "affine");
}

Tensor unary(const Tensor& a, UnaryOp op) {
  Tensor out = Tensor::empty(a.sizes(), a.dtype(), a.device());
  const int64_t n = out.numel();
  if (n == 0) return out;
  dispatch_float(a.dtype(), "unary op", [&](auto tag) {
    using T = decltype(tag);
    unary_kernel<T><<<blocks_for(n), kThreads>>>(static_cast<T*>(out.raw_data()), static_cast<const T*>(a.raw_data()),
                                                 make_indexer(a, a.sizes()), op, n);
  });
  check_launch("unary");
  return out;
}

Tensor pow_scalar(const Tensor& a, double exponent) {
  return derivative(Tensor(), a, Derivative::PowValue, exponent, 0, "pow");
}
Tensor gradient_of(GradientOf f, const Tensor& grad, const Tensor& saved, double exponent) {
  switch (f) {
    case GradientOf::Relu: return derivative(grad, saved, Derivative::Relu, 0, 0, "relu_backward");
    case GradientOf::Gelu: return derivative(grad, saved, Derivative::Gelu, 0, 0, "gelu_backward");
    case GradientOf::Tanh: return derivative(grad, saved, Derivative::Tanh, 0, 0, "tanh_backward");
    case GradientOf::Sigmoid: return derivative(grad, saved, Derivative::Sigmoid, 0, 0, "sigmoid_backward");
    case GradientOf::Pow: return derivative(grad, saved, Derivative::Pow, exponent, 0, "pow_backward");
  }
  DDPSCOPE_CHECK(false, "gradient_of: unknown function ", static_cast<int>(f));
  return {};
}

}  // namespace ddpscope::cuda_kernels
