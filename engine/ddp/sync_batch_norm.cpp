#include "sync_batch_norm.h"

#include "autograd/function_helpers.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "ddpscope/error.h"
#include "tensor/kernels.h"

namespace ddpscope::ddp {
namespace {

class AllReduceSumBackward : public autograd::Node {
 public:
  explicit AllReduceSumBackward(c10d::ProcessGroup& group) : group_(group) {}
  std::string name() const override { return "AllReduceSumBackward"; }
  autograd::variable_list apply(autograd::variable_list&& grads) override {
    Tensor g = grads[0].contiguous().clone();
    group_.allreduce(g, {.op = c10d::ReduceOp::Sum})->wait();
    return {g};
  }

 private:
  c10d::ProcessGroup& group_;
};

}  // namespace

Tensor all_reduce_sum(const Tensor& x, c10d::ProcessGroup& group) {
  Tensor out = x.contiguous().clone();
  group.allreduce(out, {.op = c10d::ReduceOp::Sum})->wait();
  if (autograd::needs_grad({&x})) autograd::connect(std::make_shared<AllReduceSumBackward>(group), {&x}, out);
  return out;
}

SyncBatchNorm::SyncBatchNorm(int64_t features, std::shared_ptr<c10d::ProcessGroup> group, double eps, double momentum)
    : group_(std::move(group)), eps_(eps), momentum_(momentum) {
  DDPSCOPE_CHECK(group_, "SyncBatchNorm: no process group given");
  weight_ = register_parameter("weight", Tensor::ones({features}));
  bias_ = register_parameter("bias", Tensor::zeros({features}));
  running_mean_ = register_buffer("running_mean", Tensor::zeros({features}));
  running_var_ = register_buffer("running_var", Tensor::ones({features}));
  num_batches_tracked_ = register_buffer("num_batches_tracked", Tensor::zeros({}, DType::I64));
}

Tensor SyncBatchNorm::forward(const Tensor& x) {
  DDPSCOPE_CHECK(x.dim() == 2 && x.size(1) == weight_.size(0), "SyncBatchNorm: expected [N, ", weight_.size(0),
                 "], got ", x.describe());
  if (!is_training()) {
    const Tensor xhat = div(sub(x, running_mean_), sqrt(add_scalar(running_var_, eps_)));
    return add(mul(xhat, weight_), bias_);
  }
  // The global count first: a rank may hold fewer samples (or none) this step.
  Tensor count = Tensor::scalar(static_cast<double>(x.size(0)), DType::F64);
  group_->allreduce(count, {.op = c10d::ReduceOp::Sum})->wait();
  const double n = count.item<double>();
  DDPSCOPE_CHECK(n > 1, "SyncBatchNorm: training needs more than one sample in the global batch, got ", n);
  // Mean, then the centred squares: two allreduces, and no E[x^2] - E[x]^2 cancellation.
  const Tensor mu = mul_scalar(all_reduce_sum(sum(x, {0}, false), *group_), 1.0 / n);
  const Tensor centered = sub(x, mu);
  const Tensor var = mul_scalar(all_reduce_sum(sum(mul(centered, centered), {0}, false), *group_), 1.0 / n);
  {
    // Running statistics as BatchNorm1d's, from the global batch (unbiased variance).
    autograd::NoGradGuard no_grad;
    kernels::scale_(running_mean_, 1.0 - momentum_);
    kernels::add_(running_mean_, mu.detach(), momentum_);
    kernels::scale_(running_var_, 1.0 - momentum_);
    kernels::add_(running_var_, var.detach(), momentum_ * n / (n - 1.0));
    num_batches_tracked_.fill_(num_batches_tracked_.item<double>() + 1.0);
  }
  const Tensor xhat = div(centered, sqrt(add_scalar(var, eps_)));
  return add(mul(xhat, weight_), bias_);
}

}  // namespace ddpscope::ddp
