// CUDA implementations of the kernels in kernels.h, with the same contracts. Reached
// only through DDPSCOPE_ROUTE_CUDA when a tensor lives on a GPU. All work is queued on
// the device's default stream, so it is ordered with the synchronous copies.
#pragma once

#include "kernels.h"

namespace ddpscope::cuda_kernels {

using kernels::BinaryOp;
using kernels::UnaryOp;

void copy(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, double value);
Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op);
void add_(const Tensor& self, const Tensor& other, double alpha);
void scale_(const Tensor& self, double factor);
Tensor affine(const Tensor& a, double scale, double shift);
Tensor unary(const Tensor& a, UnaryOp op);
Tensor pow_scalar(const Tensor& a, double exponent);
// kernels::relu_backward and its kin, which are one grid loop here: grad * f'(saved),
// where saved is what that function's CPU twin names (the output or the input).
enum class GradientOf { Relu, Gelu, Tanh, Sigmoid, Pow };
Tensor gradient_of(GradientOf f, const Tensor& grad, const Tensor& saved, double exponent = 0);

Tensor sum(const Tensor& a);
Tensor sum_dims(const Tensor& a, std::vector<int64_t> dims, bool keepdim);

void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta);

Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
Tensor softmax_backward(const Tensor& grad, const Tensor& output);
Tensor log_softmax_backward(const Tensor& grad, const Tensor& output);
kernels::LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
kernels::LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                            const Tensor& mean, const Tensor& rstd);
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights);
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets);
Tensor nll_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets);

}  // namespace ddpscope::cuda_kernels
