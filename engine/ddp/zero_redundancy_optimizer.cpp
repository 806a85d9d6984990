#include "zero_redundancy_optimizer.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "ddpscope/error.h"
#include "probe.h"

namespace ddpscope::ddp {

std::vector<int> partition_parameters(const std::vector<int64_t>& numels, int world_size) {
  DDPSCOPE_CHECK(world_size >= 1, "ZeroRedundancyOptimizer: the group has no ranks");
  std::vector<size_t> order(numels.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return numels[a] > numels[b]; });
  std::vector<int64_t> load(static_cast<size_t>(world_size), 0);
  std::vector<int> owner(numels.size(), 0);
  for (size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end());
    owner[i] = static_cast<int>(least - load.begin());
    *least += numels[i];
  }
  return owner;
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, std::shared_ptr<c10d::ProcessGroup> group,
                                                 OptimizerFactory make_optimizer)
    : params_(std::move(params)), group_(std::move(group)) {
  DDPSCOPE_CHECK(group_, "ZeroRedundancyOptimizer: no process group given");
  DDPSCOPE_CHECK(!params_.empty(), "ZeroRedundancyOptimizer: no parameters given");
  DDPSCOPE_CHECK(make_optimizer, "ZeroRedundancyOptimizer: no optimizer to wrap");
  std::vector<int64_t> numels;
  for (const Tensor& p : params_) {
    DDPSCOPE_CHECK(p.defined() && p.requires_grad(), "ZeroRedundancyOptimizer: parameter ", p.name(),
                   " is undefined or does not require a gradient");
    numels.push_back(p.numel());
  }
  owner_ = partition_parameters(numels, group_->size());
  shards_.resize(static_cast<size_t>(group_->size()));
  for (size_t i = 0; i < params_.size(); ++i)
    shards_[static_cast<size_t>(owner_[i])].push_back(i);
  std::vector<Tensor> mine;
  local_index_.assign(params_.size(), -1);
  for (size_t i : shard(group_->rank())) {
    local_index_[i] = static_cast<int64_t>(mine.size());
    mine.push_back(params_[i]);
  }
  local_ = make_optimizer(std::move(mine));
  DDPSCOPE_CHECK(local_, "ZeroRedundancyOptimizer: the optimizer factory returned nothing");
}

void ZeroRedundancyOptimizer::overlap_with(DistributedDataParallel& model) {
  std::unordered_map<const TensorImpl*, size_t> index_of;
  for (size_t i = 0; i < params_.size(); ++i)
    index_of[params_[i].impl()] = i;
  std::vector<int64_t> to_local;  // reducer index -> local_ index (-1: another rank's)
  for (const Tensor& p : model.reducer().parameters()) {
    const auto it = index_of.find(p.impl());
    DDPSCOPE_CHECK(it != index_of.end(), "ZeroRedundancyOptimizer::overlap_with: DDP parameter ", p.name(),
                   " is not among the optimizer's parameters");
    to_local.push_back(local_index_[it->second]);
  }
  DDPSCOPE_CHECK(to_local.size() == params_.size(), "ZeroRedundancyOptimizer::overlap_with: DDP has ", to_local.size(),
                 " parameters, the optimizer ", params_.size());
  model.reducer().set_bucket_reduced_hook(
      [this, to_local = std::move(to_local)](size_t bucket, const std::vector<size_t>& params) {
        std::vector<size_t> mine;
        for (size_t p : params)
          if (to_local[p] >= 0) mine.push_back(static_cast<size_t>(to_local[p]));
        if (mine.empty()) return;
        DDPSCOPE_SPAN(span, probes::Kind::Optimizer, "zero shard step");
        span.args().bucket = static_cast<int16_t>(bucket);
        local_->step_params(mine);
        stepped_in_hook_ += static_cast<int64_t>(mine.size());
      });
  overlapped_ = true;
}

void ZeroRedundancyOptimizer::step() {
  if (!overlapped_) {
    DDPSCOPE_SPAN(span, probes::Kind::Optimizer, "zero shard step");
    local_->step();
  }
  // Every parameter from its owner, issued together: ops on one group complete in issue
  // order, so waiting on each in turn costs no more than the slowest.
  std::vector<std::shared_ptr<c10d::Work>> pending;
  pending.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    pending.push_back(group_->broadcast(params_[i].detach(), {.root = owner_[i]}));
  for (auto& w : pending)
    w->wait();
}

void ZeroRedundancyOptimizer::zero_grad(bool set_to_none) { optim::zero_grad(params_, set_to_none); }

}  // namespace ddpscope::ddp
