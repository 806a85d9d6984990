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
    : nn::BatchNorm1d(features, eps, momentum), group_(std::move(group)) {
  DDPSCOPE_CHECK(group_, "SyncBatchNorm: no process group given");
}

Tensor SyncBatchNorm::forward(const Tensor& x) {
  check_input(x, "SyncBatchNorm");
  if (!is_training()) return normalize_with_running_stats(x);
  // The global count first: a rank may hold fewer samples (or none) this step.
  Tensor count = Tensor::scalar(static_cast<double>(x.size(0)), DType::F64);
  group_->allreduce(count, {.op = c10d::ReduceOp::Sum})->wait();
  const double n = count.item<double>();
  DDPSCOPE_CHECK(n > 1, "SyncBatchNorm: training needs more than one sample in the global batch, got ", n);
  // Mean, then the centred squares: two allreduces, and no E[x^2] - E[x]^2 cancellation.
  const Tensor mu = mul_scalar(all_reduce_sum(sum(x, {0}, false), *group_), 1.0 / n);
  const Tensor centered = sub(x, mu);
  const Tensor var = mul_scalar(all_reduce_sum(sum(mul(centered, centered), {0}, false), *group_), 1.0 / n);
  update_running_stats(mu, var, n);  // from the global batch: the same on every rank
  return normalize(centered, var);
}

namespace {

// The SyncBatchNorm that stands in for `bn`, or null when `m` is no plain BatchNorm1d.
std::shared_ptr<nn::Module> synced(const nn::Module& m, const std::shared_ptr<c10d::ProcessGroup>& group) {
  const auto* bn = dynamic_cast<const nn::BatchNorm1d*>(&m);
  if (!bn || dynamic_cast<const SyncBatchNorm*>(&m)) return nullptr;
  auto sync = std::make_shared<SyncBatchNorm>(bn->features(), group, bn->eps(), bn->momentum());
  sync->load_state_dict(bn->state_dict());
  sync->train(bn->is_training());
  return sync;
}

void convert_children(nn::Module& m, const std::shared_ptr<c10d::ProcessGroup>& group) {
  const auto children = m.children();  // a copy: replace_child changes the list
  for (const auto& [name, child] : children) {
    if (auto sync = synced(*child, group))
      m.replace_child(name, std::move(sync));
    else
      convert_children(*child, group);
  }
}

}  // namespace

std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module,
                                                   std::shared_ptr<c10d::ProcessGroup> group) {
  DDPSCOPE_CHECK(module != nullptr, "convert_sync_batchnorm: no module given");
  DDPSCOPE_CHECK(group != nullptr, "convert_sync_batchnorm: no process group given");
  if (auto sync = synced(*module, group)) return sync;
  convert_children(*module, group);
  return module;
}

}  // namespace ddpscope::ddp
