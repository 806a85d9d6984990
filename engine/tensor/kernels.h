// Tensor math without autograd. Each function runs on the tensors' device (CPU loops and
// OpenBLAS, or CUDA kernels and cuBLAS) and returns a new contiguous tensor unless its
// name ends in '_' (in place). Floating math runs in f32 or f64; f16/bf16/i64 take part
// in copies and conversions only, except where a function says otherwise.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor.h"

namespace ddpscope::kernels {

// ---- copies and fills ----
void copy(const Tensor& dst, const Tensor& src);  // same shape, any dtypes, strided
void fill(const Tensor& dst, double value);

// ---- elementwise ----
Shape broadcast_shapes(const Shape& a, const Shape& b);
enum class BinaryOp { Add, Sub, Mul, Div };
Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op);  // broadcasting
// self += alpha * other (other broadcast to self's shape). add_ and scale_ also take
// f16/bf16 (computed in f32, stored rounded): gradients may be kept in those.
void add_(const Tensor& self, const Tensor& other, double alpha = 1.0);
void scale_(const Tensor& self, double factor);
// dst = src * factor (same shape): one pass over memory where a copy then a scale_
// would take two. DDP writes averaged gradients back with it.
void copy_scaled(const Tensor& dst, const Tensor& src, double factor);
Tensor affine(const Tensor& a, double scale, double shift);  // a * scale + shift

enum class UnaryOp { Neg, Exp, Log, Sqrt, Tanh, Sigmoid, Relu, Gelu, Square, Abs };
Tensor unary(const Tensor& a, UnaryOp op);
Tensor pow_scalar(const Tensor& a, double exponent);
// Gradient helpers: dy * f'(x) expressed through what the forward saved.
Tensor relu_backward(const Tensor& grad, const Tensor& output);
Tensor gelu_backward(const Tensor& grad, const Tensor& input);
Tensor tanh_backward(const Tensor& grad, const Tensor& output);
Tensor sigmoid_backward(const Tensor& grad, const Tensor& output);
Tensor pow_backward(const Tensor& grad, const Tensor& input, double exponent);

// ---- reductions ----
Tensor sum(const Tensor& a);  // 0-d
Tensor sum_dims(const Tensor& a, std::vector<int64_t> dims, bool keepdim);
// Sums a broadcast result back to `shape` (the backward of broadcasting).
Tensor sum_to(const Tensor& a, const Shape& shape);
double max_abs_diff(const Tensor& a, const Tensor& b);

// ---- matrix products (OpenBLAS / cuBLAS) ----
// C = alpha * op(A) @ op(B) + beta * C for 2-D tensors. A and B may be transposed views
// of contiguous matrices: they go to BLAS as transposed operands, never copied.
void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha = 1.0, double beta = 0.0);
Tensor matmul(const Tensor& a, const Tensor& b);  // [M,K]x[K,N] or [B,M,K]x[B,K,N]

// ---- neural-network kernels, all over the last dimension ----
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
Tensor softmax_backward(const Tensor& grad, const Tensor& output);
Tensor log_softmax_backward(const Tensor& grad, const Tensor& output);

struct LayerNormResult {
  Tensor output, mean, rstd;  // mean and rstd: one per row
};
LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
struct LayerNormGrads {
  Tensor input, weight, bias;
};
LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                   const Tensor& rstd);

Tensor embedding(const Tensor& weight, const Tensor& indices);  // indices i64
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights);

// Mean negative log-likelihood of targets (i64 [N]) under log-probabilities [N, C].
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets);
Tensor nll_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets);

}  // namespace ddpscope::kernels
