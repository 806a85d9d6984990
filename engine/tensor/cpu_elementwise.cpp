// Elementwise arithmetic on the CPU: broadcasting binary ops, unary functions and the
// derivative helpers autograd uses. Contiguous operands take a flat loop the compiler
// vectorises; anything else goes through the strided walker.
#include <cmath>

#include "cuda_dispatch.h"
#include "kernels.h"
#include "strided_loop.h"

namespace ddpscope::kernels {
namespace {

void check_same_device_dtype(const Tensor& a, const Tensor& b, const char* op) {
  DDPSCOPE_CHECK(a.device() == b.device(), op, ": operands on ", a.device().str(), " and ", b.device().str());
  DDPSCOPE_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ (", a.describe(), " vs ", b.describe(),
                 "); convert one with to()");
}

template <typename T, typename Fn>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, Fn fn) {
  T* o = out.data<T>();
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const int64_t n = out.numel();
  if (a.sizes() == out.sizes() && b.sizes() == out.sizes() && a.is_contiguous() && b.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = fn(pa[i], pb[i]);
    return;
  }
  if (b.numel() == 1 && a.sizes() == out.sizes() && a.is_contiguous()) {
    const T s = *pb;
    for (int64_t i = 0; i < n; ++i)
      o[i] = fn(pa[i], s);
    return;
  }
  const Tensor ea = a.expand(out.sizes()), eb = b.expand(out.sizes());
  const Shape& so = out.strides();
  for_each_offset<3>(out.sizes(), {&so, &ea.strides(), &eb.strides()}, {0, 0, 0},
                     [&](const std::array<int64_t, 3>& off) { o[off[0]] = fn(pa[off[1]], pb[off[2]]); });
}

template <typename T, typename Fn>
Tensor map_unary(const Tensor& a, Fn fn) {
  const Tensor src = a.contiguous();
  Tensor out = Tensor::empty(a.sizes(), a.dtype(), a.device());
  const T* in = src.data<T>();
  T* o = out.data<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i)
    o[i] = fn(in[i]);
  return out;
}

template <typename T, typename Fn>
Tensor map_binary_same_shape(const Tensor& a, const Tensor& b, const char* op, Fn fn) {
  DDPSCOPE_CHECK(a.sizes() == b.sizes(), op, ": shapes ", a.describe(), " and ", b.describe(), " differ");
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  Tensor out = Tensor::empty(a.sizes(), a.dtype(), a.device());
  const T* pa = ca.data<T>();
  const T* pb = cb.data<T>();
  T* o = out.data<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i)
    o[i] = fn(pa[i], pb[i]);
  return out;
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t nd = std::max(a.size(), b.size());
  Shape out(nd);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const int64_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    DDPSCOPE_CHECK(da == db || da == 1 || db == 1, "shapes ", shape_str(a), " and ", shape_str(b),
                   " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op) {
  check_same_device_dtype(a, b, "binary op");
  DDPSCOPE_ROUTE_CUDA(a, binary(a, b, op));
  Tensor out = Tensor::empty(broadcast_shapes(a.sizes(), b.sizes()), a.dtype(), a.device());
  dispatch_compute(a.dtype(), "binary op", [&]<typename T>() {
    switch (op) {
      case BinaryOp::Add: binary_loop<T>(out, a, b, [](T x, T y) { return x + y; }); break;
      case BinaryOp::Sub: binary_loop<T>(out, a, b, [](T x, T y) { return x - y; }); break;
      case BinaryOp::Mul: binary_loop<T>(out, a, b, [](T x, T y) { return x * y; }); break;
      case BinaryOp::Div: binary_loop<T>(out, a, b, [](T x, T y) { return x / y; }); break;
    }
  });
  return out;
}

void add_(const Tensor& self, const Tensor& other, double alpha) {
  check_same_device_dtype(self, other, "add_");
  if (!is_compute_type(self.dtype()) && is_floating(self.dtype())) {
    // f16/bf16 gradients (accumulation, DDP averaging): compute in f32, store rounded.
    const Tensor f = self.to(DType::F32);
    add_(f, other.to(DType::F32), alpha);
    copy(self, f);
    self.bump_version();
    return;
  }
  DDPSCOPE_ROUTE_CUDA(self, add_(self, other, alpha));
  dispatch_compute(self.dtype(), "add_", [&]<typename T>() {
    const T al = static_cast<T>(alpha);
    binary_loop<T>(self, self, other, [al](T x, T y) { return x + al * y; });
  });
  self.bump_version();
}

void scale_(const Tensor& self, double factor) {
  if (!is_compute_type(self.dtype()) && is_floating(self.dtype())) {
    const Tensor f = self.to(DType::F32);
    scale_(f, factor);
    copy(self, f);
    self.bump_version();
    return;
  }
  DDPSCOPE_ROUTE_CUDA(self, scale_(self, factor));
  dispatch_compute(self.dtype(), "scale_", [&]<typename T>() {
    T* p = self.data<T>();
    const T f = static_cast<T>(factor);
    if (self.is_contiguous()) {
      const int64_t n = self.numel();
      for (int64_t i = 0; i < n; ++i)
        p[i] *= f;
    } else {
      for_each_offset<1>(self.sizes(), {&self.strides()}, {0}, [&](const std::array<int64_t, 1>& o) { p[o[0]] *= f; });
    }
  });
  self.bump_version();
}

void copy_scaled(const Tensor& dst, const Tensor& src, double factor) {
  DDPSCOPE_CHECK(dst.sizes() == src.sizes(), "copy_scaled: source ", src.describe(), " does not match destination ",
                 dst.describe());
  const bool fused = dst.device().is_cpu() && src.device().is_cpu() && dst.dtype() == src.dtype() &&
                     is_compute_type(dst.dtype()) && dst.is_contiguous() && src.is_contiguous();
  if (!fused || factor == 1.0) {  // other devices, dtypes and layouts: the two-pass way
    copy(dst, src);
    if (factor != 1.0) scale_(dst, factor);
    dst.bump_version();
    return;
  }
  dispatch_compute(dst.dtype(), "copy_scaled", [&]<typename T>() {
    T* d = dst.data<T>();
    const T* s = src.data<T>();
    const T f = static_cast<T>(factor);
    const int64_t n = dst.numel();
    for (int64_t i = 0; i < n; ++i)
      d[i] = s[i] * f;
  });
  dst.bump_version();
}

Tensor affine(const Tensor& a, double scale, double shift) {
  DDPSCOPE_ROUTE_CUDA(a, affine(a, scale, shift));
  return dispatch_compute(a.dtype(), "affine", [&]<typename T>() {
    const T s = static_cast<T>(scale), b = static_cast<T>(shift);
    return map_unary<T>(a, [s, b](T x) { return x * s + b; });
  });
}

Tensor unary(const Tensor& a, UnaryOp op) {
  DDPSCOPE_ROUTE_CUDA(a, unary(a, op));
  return dispatch_compute(a.dtype(), "unary op", [&]<typename T>() -> Tensor {
    switch (op) {
      case UnaryOp::Neg: return map_unary<T>(a, [](T x) { return -x; });
      case UnaryOp::Exp: return map_unary<T>(a, [](T x) { return std::exp(x); });
      case UnaryOp::Log: return map_unary<T>(a, [](T x) { return std::log(x); });
      case UnaryOp::Sqrt: return map_unary<T>(a, [](T x) { return std::sqrt(x); });
      case UnaryOp::Tanh: return map_unary<T>(a, [](T x) { return std::tanh(x); });
      case UnaryOp::Sigmoid: return map_unary<T>(a, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
      case UnaryOp::Relu: return map_unary<T>(a, [](T x) { return x > T(0) ? x : T(0); });
      case UnaryOp::Gelu:
        return map_unary<T>(a, [](T x) { return T(0.5) * x * (T(1) + std::erf(x * static_cast<T>(kInvSqrt2))); });
      case UnaryOp::Square: return map_unary<T>(a, [](T x) { return x * x; });
      case UnaryOp::Abs: return map_unary<T>(a, [](T x) { return std::abs(x); });
    }
    throw DDPSCOPE_ERROR("unknown unary op");
  });
}

Tensor pow_scalar(const Tensor& a, double exponent) {
  DDPSCOPE_ROUTE_CUDA(a, pow_scalar(a, exponent));
  return dispatch_compute(a.dtype(), "pow", [&]<typename T>() {
    const T e = static_cast<T>(exponent);
    return map_unary<T>(a, [e](T x) { return std::pow(x, e); });
  });
}

Tensor relu_backward(const Tensor& grad, const Tensor& output) {
  DDPSCOPE_ROUTE_CUDA(grad, gradient_of(cuda_kernels::GradientOf::Relu, grad, output));
  return dispatch_compute(grad.dtype(), "relu_backward", [&]<typename T>() {
    return map_binary_same_shape<T>(grad, output, "relu_backward", [](T g, T y) { return y > T(0) ? g : T(0); });
  });
}

Tensor gelu_backward(const Tensor& grad, const Tensor& input) {
  DDPSCOPE_ROUTE_CUDA(grad, gradient_of(cuda_kernels::GradientOf::Gelu, grad, input));
  return dispatch_compute(grad.dtype(), "gelu_backward", [&]<typename T>() {
    return map_binary_same_shape<T>(grad, input, "gelu_backward", [](T g, T x) {
      const T cdf = T(0.5) * (T(1) + std::erf(x * static_cast<T>(kInvSqrt2)));
      const T pdf = static_cast<T>(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
      return g * (cdf + x * pdf);
    });
  });
}

Tensor tanh_backward(const Tensor& grad, const Tensor& output) {
  DDPSCOPE_ROUTE_CUDA(grad, gradient_of(cuda_kernels::GradientOf::Tanh, grad, output));
  return dispatch_compute(grad.dtype(), "tanh_backward", [&]<typename T>() {
    return map_binary_same_shape<T>(grad, output, "tanh_backward", [](T g, T y) { return g * (T(1) - y * y); });
  });
}

Tensor sigmoid_backward(const Tensor& grad, const Tensor& output) {
  DDPSCOPE_ROUTE_CUDA(grad, gradient_of(cuda_kernels::GradientOf::Sigmoid, grad, output));
  return dispatch_compute(grad.dtype(), "sigmoid_backward", [&]<typename T>() {
    return map_binary_same_shape<T>(grad, output, "sigmoid_backward", [](T g, T y) { return g * y * (T(1) - y); });
  });
}

Tensor pow_backward(const Tensor& grad, const Tensor& input, double exponent) {
  DDPSCOPE_ROUTE_CUDA(grad, gradient_of(cuda_kernels::GradientOf::Pow, grad, input, exponent));
  return dispatch_compute(grad.dtype(), "pow_backward", [&]<typename T>() {
    const T e = static_cast<T>(exponent);
    return map_binary_same_shape<T>(grad, input, "pow_backward",
                                    [e](T g, T x) { return g * e * std::pow(x, e - T(1)); });
  });
}

}  // namespace ddpscope::kernels
