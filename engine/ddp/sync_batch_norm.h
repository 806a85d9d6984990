// SyncBatchNorm: BatchNorm over the group's global batch (PyTorch's nn.SyncBatchNorm).
// In training the statistics come from every rank's samples: the per-feature sums and the
// sample count are allreduced, then the centred squares, so ranks with different batch
// sizes weigh by their counts and every rank normalises with the same mean and variance.
// The gradient flows back through those allreduces (the backward of a sum allreduce is a
// sum allreduce of the gradient), so each rank's input gradient is that of the loss of the
// whole global batch. In eval it is BatchNorm with the running statistics, which are
// updated exactly as BatchNorm1d's from the global statistics (unbiased variance over the
// global count), so every rank keeps the same ones.
//
//   bn_ = register_module("bn", std::make_shared<ddp::SyncBatchNorm>(64, group));
//   ... y = bn_->forward(x) ...   // x: this rank's [N_r, 64]
//
// Its forward and backward hold collectives: every rank must run them (with uneven
// inputs, DDP's join cannot stand in for them).
#pragma once

#include <memory>

#include "c10d/process_group.h"
#include "nn/layers.h"

namespace ddpscope::ddp {

// A BatchNorm1d (same parameters, buffers and state dict) whose batch statistics are the
// group's.
class SyncBatchNorm : public nn::BatchNorm1d {
 public:
  SyncBatchNorm(int64_t features, std::shared_ptr<c10d::ProcessGroup> group, double eps = 1e-5, double momentum = 0.1);
  std::string type_name() const override { return "SyncBatchNorm"; }
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<c10d::ProcessGroup> group_;
};

// PyTorch's SyncBatchNorm.convert_sync_batchnorm: every BatchNorm1d in `module` (and
// `module` itself) becomes a SyncBatchNorm over `group` with its parameters, running
// statistics and mode. Returns the module to use (the new one when `module` was a
// BatchNorm1d). Call it before building DDP and the optimizer: the parameters are new
// tensors. A BatchNorm1d held in a module's own member (not a Sequential's) is refused.
std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module,
                                                   std::shared_ptr<c10d::ProcessGroup> group);

// A sum over the group's ranks that autograd differentiates: forward allreduces `x`
// (summing), backward allreduces the incoming gradient.
Tensor all_reduce_sum(const Tensor& x, c10d::ProcessGroup& group);

}  // namespace ddpscope::ddp
