#include "layers.h"

#include <cmath>

#include "../autograd/grad_mode.h"
#include "../autograd/ops.h"
#include "../tensor/kernels.h"

namespace ddpscope::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Generator* gen) {
  DDPSCOPE_CHECK(in_features > 0 && out_features > 0, "Linear: features must be positive, got ", in_features, " -> ",
                 out_features);
  // PyTorch's default (kaiming_uniform with a = sqrt(5)) reduces to U(-1/sqrt(in), 1/sqrt(in)).
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight_ = register_parameter("weight", uniform({out_features, in_features}, -bound, bound, DType::F32, gen));
  if (bias) bias_ = register_parameter("bias", uniform({out_features}, -bound, bound, DType::F32, gen));
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight_, bias_); }

Embedding::Embedding(int64_t num_embeddings, int64_t dim, Generator* gen) {
  DDPSCOPE_CHECK(num_embeddings > 0 && dim > 0, "Embedding: sizes must be positive");
  weight_ = register_parameter("weight", randn({num_embeddings, dim}, DType::F32, gen));
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight_, indices); }

LayerNorm::LayerNorm(int64_t dim, double eps) : eps_(eps) {
  weight_ = register_parameter("weight", Tensor::ones({dim}));
  bias_ = register_parameter("bias", Tensor::zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight_, bias_, eps_); }

BatchNorm1d::BatchNorm1d(int64_t features, double eps, double momentum) : eps_(eps), momentum_(momentum) {
  weight_ = register_parameter("weight", Tensor::ones({features}));
  bias_ = register_parameter("bias", Tensor::zeros({features}));
  running_mean_ = register_buffer("running_mean", Tensor::zeros({features}));
  running_var_ = register_buffer("running_var", Tensor::ones({features}));
  num_batches_tracked_ = register_buffer("num_batches_tracked", Tensor::zeros({}, DType::I64));
}

void BatchNorm1d::check_input(const Tensor& x, const char* who) const {
  DDPSCOPE_CHECK(x.dim() == 2 && x.size(1) == weight_.size(0), who, ": expected [N, ", weight_.size(0), "], got ",
                 x.describe());
}

Tensor BatchNorm1d::normalize_with_running_stats(const Tensor& x) const {
  const Tensor xhat = div(sub(x, running_mean_), sqrt(add_scalar(running_var_, eps_)));
  return add(mul(xhat, weight_), bias_);
}

void BatchNorm1d::update_running_stats(const Tensor& mu, const Tensor& var, double n) {
  // Running statistics use the unbiased variance, like PyTorch.
  autograd::NoGradGuard no_grad;
  kernels::scale_(running_mean_, 1.0 - momentum_);
  kernels::add_(running_mean_, mu.detach(), momentum_);
  kernels::scale_(running_var_, 1.0 - momentum_);
  kernels::add_(running_var_, var.detach(), momentum_ * n / (n - 1.0));
  num_batches_tracked_.fill_(num_batches_tracked_.item<double>() + 1.0);
}

Tensor BatchNorm1d::normalize(const Tensor& centered, const Tensor& var) const {
  const Tensor xhat = div(centered, sqrt(add_scalar(var, eps_)));
  return add(mul(xhat, weight_), bias_);
}

Tensor BatchNorm1d::forward(const Tensor& x) {
  check_input(x, "BatchNorm1d");
  if (!is_training()) return normalize_with_running_stats(x);
  DDPSCOPE_CHECK(x.size(0) > 1, "BatchNorm1d: training needs more than one sample per batch, got ", x.describe());
  const Tensor mu = mean(x, {0}, false);
  const Tensor centered = sub(x, mu);
  const Tensor var = mean(mul(centered, centered), {0}, false);
  update_running_stats(mu, var, static_cast<double>(x.size(0)));
  return normalize(centered, var);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p_, is_training(), gen_); }
Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor GELU::forward(const Tensor& x) { return gelu(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }

Sequential::Sequential(std::vector<std::shared_ptr<Module>> layers) {
  for (auto& l : layers)
    push_back(std::move(l));
}

void Sequential::push_back(std::shared_ptr<Module> layer) {
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

void Sequential::replace_child_member(const std::string& name, const std::shared_ptr<Module>& child) {
  layers_.at(std::stoul(name)) = child;  // children are named by their position
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& l : layers_)
    h = l->forward(h);
  return h;
}

}  // namespace ddpscope::nn
