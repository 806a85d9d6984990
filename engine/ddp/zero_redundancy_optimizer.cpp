#include "zero_redundancy_optimizer.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

#include "ddpscope/error.h"
#include "probe.h"
#include "records.h"

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
  std::vector<probes::ShardRecord> records;
  for (size_t i = 0; i < params_.size(); ++i)
    records.push_back({static_cast<int32_t>(i), params_[i].name(), params_[i].numel(), owner_[i]});
  probes::record_zero_partition(group_->size(), records);
}

void ZeroRedundancyOptimizer::overlap_with(DistributedDataParallel& model) {
  std::unordered_map<const TensorImpl*, size_t> index_of;
  for (size_t i = 0; i < params_.size(); ++i)
    index_of[params_[i].impl()] = i;
  to_global_.clear();  // reducer index -> index into params_
  for (const Tensor& p : model.reducer().parameters()) {
    const auto it = index_of.find(p.impl());
    DDPSCOPE_CHECK(it != index_of.end(), "ZeroRedundancyOptimizer::overlap_with: DDP parameter ", p.name(),
                   " is not among the optimizer's parameters");
    to_global_.push_back(it->second);
  }
  DDPSCOPE_CHECK(to_global_.size() == params_.size(), "ZeroRedundancyOptimizer::overlap_with: DDP has ",
                 to_global_.size(), " parameters, the optimizer ", params_.size());
  model.reducer().set_bucket_reduced_hook(
      [this](size_t bucket, const std::vector<size_t>& params) { step_and_send_bucket(bucket, params); });
  overlapped_with_ = &model;
}

void ZeroRedundancyOptimizer::step_and_send_bucket(size_t bucket, const std::vector<size_t>& params) {
  std::vector<size_t> mine;
  for (size_t p : params)
    if (local_index_[to_global_[p]] >= 0) mine.push_back(static_cast<size_t>(local_index_[to_global_[p]]));
  if (!mine.empty()) {
    DDPSCOPE_SPAN(span, probes::Kind::Optimizer, "zero shard step");
    span.args().bucket = static_cast<int16_t>(bucket);
    local_->step_params(mine);
    stepped_in_hook_ += static_cast<int64_t>(mine.size());
  }
  // The bucket's parameters go out now, while the later buckets are stepped. Every rank
  // runs this for the same buckets in the same order, after all of the iteration's
  // allreduces were issued, so the broadcasts match across ranks.
  std::vector<size_t> indices;
  for (size_t p : params)
    indices.push_back(to_global_[p]);
  send_parameters(indices);
}

void ZeroRedundancyOptimizer::send_parameters(const std::vector<size_t>& indices) {
  // One op per dtype, in order of first appearance: the same ops on every rank.
  std::vector<DType> dtypes;
  for (size_t i : indices)
    if (std::find(dtypes.begin(), dtypes.end(), params_[i].dtype()) == dtypes.end())
      dtypes.push_back(params_[i].dtype());
  for (DType dtype : dtypes) {
    std::vector<Tensor> tensors;
    std::vector<int> roots;
    for (size_t i : indices) {
      if (params_[i].dtype() != dtype) continue;
      tensors.push_back(params_[i].detach());
      roots.push_back(owner_[i]);
      in_flight_bytes_ += static_cast<int64_t>(params_[i].nbytes());
    }
    in_flight_.push_back(group_->broadcast_coalesced(tensors, roots));
  }
  in_flight_params_ += indices.size();
}

void ZeroRedundancyOptimizer::wait_for_sent() {
  DDPSCOPE_SPAN(span, probes::Kind::ParamSync, "zero broadcast");
  span.args().bytes = in_flight_bytes_;
  for (auto& w : in_flight_)
    w->wait();
  in_flight_.clear();
  in_flight_params_ = 0;
  in_flight_bytes_ = 0;
}

void ZeroRedundancyOptimizer::step() {
  consolidated_.reset();  // the state it held is a step old now
  if (overlapped_with_ && in_flight_params_ == params_.size()) {
    wait_for_sent();  // DDP's hook stepped every bucket's share and sent it
    return;
  }
  // Not overlapped, or the hook did not run for every bucket (a no_sync backward, where
  // DDP reduces nothing): what it sent must still complete before the whole step.
  DDPSCOPE_CHECK(in_flight_.empty(), "ZeroRedundancyOptimizer::step: DDP's hook sent ", in_flight_params_, " of ",
                 params_.size(), " parameters in this backward; every bucket must be reduced before step()");
  {
    DDPSCOPE_SPAN(span, probes::Kind::Optimizer, "zero shard step");
    local_->step();
  }
  broadcast_parameters();
}

void ZeroRedundancyOptimizer::broadcast_parameters() {
  std::vector<size_t> all(params_.size());
  std::iota(all.begin(), all.end(), size_t{0});
  send_parameters(all);
  wait_for_sent();
}

void ZeroRedundancyOptimizer::join_with(DistributedDataParallel::JoinContext& join) {
  // A shadowed iteration got the averaged gradients into .grad (the reducer's bucket hook
  // does not run while shadowing): step the shard and send it in the order the training
  // ranks do, bucket by bucket under overlap_with, else all at once.
  join.add_shadow_step([this] {
    if (overlapped_with_) {
      const auto& buckets = overlapped_with_->buckets();
      for (size_t b = 0; b < buckets.size(); ++b)
        step_and_send_bucket(b, buckets[b].params);
      wait_for_sent();
      return;
    }
    {
      DDPSCOPE_SPAN(span, probes::Kind::Optimizer, "zero shard step");
      local_->step();
    }
    broadcast_parameters();
  });
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int to) {
  DDPSCOPE_CHECK(to >= 0 && to < group_->size(), "ZeroRedundancyOptimizer::consolidate_state_dict: rank ", to,
                 " is not in the group of ", group_->size());
  const int rank = group_->rank();
  // Which (parameter, field) each owner has: one allreduce of presence flags, then one
  // broadcast per present entry from its owner, in the same order on every rank (PyTorch
  // broadcasts each rank's state too). The fields are the same on every rank: one factory.
  const std::vector<std::string> fields = local_->state_fields();
  const int64_t nf = static_cast<int64_t>(fields.size());
  Tensor present = Tensor::zeros({static_cast<int64_t>(params_.size()) * nf}, DType::I64);
  std::map<std::pair<size_t, std::string>, Tensor> mine;  // the local state by global index
  for (auto& [key, value] : local_->state_dict()) {
    auto [local, field] = *optim::parse_state_key(key);
    const size_t i = shard(rank)[local];
    const auto f = std::find(fields.begin(), fields.end(), field) - fields.begin();
    present.data<int64_t>()[static_cast<int64_t>(i) * nf + f] = 1;
    mine[{i, field}] = value;
  }
  Tensor on_group = present.to(group_->tensor_device());
  group_->allreduce(on_group, {.op = c10d::ReduceOp::Sum})->wait();
  present = on_group.to(Device::cpu());
  nn::StateDict whole;
  for (size_t i = 0; i < params_.size(); ++i) {
    for (int64_t f = 0; f < nf; ++f) {
      if (present.data<int64_t>()[static_cast<int64_t>(i) * nf + f] == 0) continue;
      const std::string& field = fields[static_cast<size_t>(f)];
      Tensor t = owner_[i] == rank ? mine.at({i, field})
                 : field == "step" ? Tensor::scalar(0, DType::I64)
                                   : Tensor::empty(params_[i].sizes(), params_[i].dtype(), params_[i].device());
      Tensor on = t.to(group_->tensor_device());
      group_->broadcast(on, {.root = owner_[i]})->wait();
      if (rank == to) whole.emplace_back(optim::state_key(i, field), on.to(t.device()));
    }
  }
  if (rank == to)
    consolidated_ = std::move(whole);
  else
    consolidated_.reset();
}

nn::StateDict ZeroRedundancyOptimizer::state_dict() const {
  DDPSCOPE_CHECK(consolidated_.has_value(), "ZeroRedundancyOptimizer::state_dict on rank ", group_->rank(),
                 ": no consolidated state here; call consolidate_state_dict(to) on every rank after the last "
                 "step, then state_dict() on rank `to`");
  return *consolidated_;
}

void ZeroRedundancyOptimizer::load_state_dict(const nn::StateDict& state) {
  nn::StateDict mine;
  for (const auto& [key, value] : state) {
    const auto parsed = optim::parse_state_key(key);
    DDPSCOPE_CHECK(parsed && parsed->first < params_.size(), "ZeroRedundancyOptimizer::load_state_dict: entry '", key,
                   "' does not name one of the ", params_.size(), " parameters as state.<index>.<field>");
    const auto& [index, field] = *parsed;
    if (local_index_[index] < 0) continue;  // another rank's shard
    mine.emplace_back(optim::state_key(static_cast<size_t>(local_index_[index]), field), value);
  }
  local_->load_state_dict(mine);
  consolidated_.reset();
}

void ZeroRedundancyOptimizer::zero_grad(bool set_to_none) { optim::zero_grad(params_, set_to_none); }

}  // namespace ddpscope::ddp
