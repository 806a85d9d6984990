// Differentiable operations. Each records a backward node when grad mode is on and an
// input requires grad; each op's gradient rule sits next to its forward in ops/*.cpp.
//
//   Tensor h = relu(linear(x, w1, b1));
//   Tensor loss = mse_loss(linear(h, w2, b2), y);
//   loss.backward();
#pragma once

#include <vector>

#include "../tensor/random.h"
#include "../tensor/tensor.h"

namespace ddpscope {

// elementwise (binary ops broadcast)
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& a);
Tensor add_scalar(const Tensor& a, double s);
Tensor mul_scalar(const Tensor& a, double s);
Tensor pow(const Tensor& a, double exponent);
Tensor exp(const Tensor& a);
// The natural logarithm (torch.log); `ln` because ddpscope::log is the logging namespace.
Tensor ln(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor gelu(const Tensor& a);  // exact (erf) form, as torch.nn.GELU()

// reductions
Tensor sum(const Tensor& a);
Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim = false);

// shapes (views where possible)
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);

// dtype conversion; the gradient is converted back to the input's dtype
// (f16/bf16 parameters computed in f32, for example)
Tensor cast(const Tensor& a, DType dtype);

// products
Tensor matmul(const Tensor& a, const Tensor& b);  // 2-D or batched 3-D
// x [..., in] @ weight[out, in]^T + bias[out]
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// neural-network functions (softmax family over the last dimension)
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
Tensor embedding(const Tensor& weight, const Tensor& indices);
// Zeroes elements with probability p and scales the rest by 1/(1-p); identity when
// !training or p == 0.
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);

// losses (mean reduction)
Tensor mse_loss(const Tensor& prediction, const Tensor& target);
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);  // logits [N, C], i64 [N]

}  // namespace ddpscope
