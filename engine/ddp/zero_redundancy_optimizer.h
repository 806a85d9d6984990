// ZeroRedundancyOptimizer: the optimizer state sharded across the ranks of a group
// (PyTorch's torch.distributed.optim.ZeroRedundancyOptimizer). The parameters are
// partitioned greedily by size, largest first, each to the rank holding the fewest
// elements so far; each rank builds the wrapped optimizer (SGD with momentum, Adam,
// AdamW) over its own shard only, so it keeps that shard's state alone. step() updates
// the shard from the (DDP-averaged) gradients, then every parameter is broadcast from
// its owner, and every rank ends the step with the same parameters as a plain optimizer.
//
//   ddp::DistributedDataParallel model(module, group);
//   ddp::ZeroRedundancyOptimizer opt(model.parameters(), group, [](std::vector<Tensor> shard) {
//     return std::make_unique<optim::Adam>(std::move(shard), optim::AdamOptions{.lr = 1e-3});
//   });
//   opt.zero_grad(); loss.backward(); opt.step();
//
// Not thread-safe: one training thread calls it, as it calls any optimizer.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "c10d/process_group.h"
#include "distributed_data_parallel.h"
#include "optim/optimizer.h"

namespace ddpscope::ddp {

class ZeroRedundancyOptimizer {
 public:
  // Builds the wrapped optimizer over the parameters it is given (this rank's shard).
  using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

  ZeroRedundancyOptimizer(std::vector<Tensor> params, std::shared_ptr<c10d::ProcessGroup> group,
                          OptimizerFactory make_optimizer);

  // Steps this rank's shard, then broadcasts every parameter from its owner (one
  // param_sync span around them). After
  // overlap_with(), the shard was stepped bucket by bucket during backward already.
  void step();
  // PyTorch's overlap_with_ddp: as each bucket's allreduce completes (DDP's bucket-reduced
  // hook, at the end of backward), this rank updates its share of the bucket and the
  // bucket's parameters are broadcast from their owners, while the later buckets are
  // still reduced and stepped; step() then waits for the broadcasts (after a no_sync
  // backward, where DDP reduced nothing, it steps and broadcasts as without overlap).
  // `model` must own exactly these parameters.
  void overlap_with(DistributedDataParallel& model);
  // Shard parameter updates made inside DDP's hook since overlap_with().
  int64_t stepped_in_hook() const { return stepped_in_hook_; }
  void zero_grad(bool set_to_none = true);

  // Uneven inputs (ZeRO is joinable in PyTorch): once this rank runs out of inputs, each
  // iteration it shadows also steps its shard with the training ranks' averaged gradients
  // and broadcasts it, so the others' step() finds every owner. Call before finish().
  void join_with(DistributedDataParallel::JoinContext& join);

  // Collective, on every rank: gathers every shard's state on rank `to` (PyTorch's
  // consolidate_state_dict), whose state_dict() then returns the whole optimizer's.
  void consolidate_state_dict(int to = 0);
  // The whole optimizer's state, as a plain optimizer over params() would return it
  // ("state.<index>.<field>", index into params()). Only on the rank given to the last
  // consolidate_state_dict(), and only until the next step.
  nn::StateDict state_dict() const;
  // Every rank passes the whole state (a state_dict() from here or from a plain optimizer
  // over the same parameters) and keeps its shard's part.
  void load_state_dict(const nn::StateDict& state);

  const std::vector<Tensor>& params() const { return params_; }
  // The rank that updates parameter `index` (into params()).
  int owner(size_t index) const { return owner_[index]; }
  // The parameters (indices into params()) rank `rank` updates, in params() order.
  const std::vector<size_t>& shard(int rank) const { return shards_.at(static_cast<size_t>(rank)); }
  // Bytes of optimizer state this rank holds (its shard's momentum, Adam moments).
  int64_t state_bytes() const { return local_->state_bytes(); }
  const optim::Optimizer& local_optimizer() const { return *local_; }

 private:
  std::vector<Tensor> params_;
  std::shared_ptr<c10d::ProcessGroup> group_;
  std::vector<int> owner_;
  std::vector<std::vector<size_t>> shards_;
  std::unique_ptr<optim::Optimizer> local_;
  void broadcast_parameters();

  std::vector<int64_t> local_index_;  // per parameter: its index in local_, -1: another rank's
  // overlap_with(): this rank's share of one reduced bucket (`params`: reducer indices),
  // stepped, then the bucket's parameters broadcast from their owners (left in flight).
  void step_and_send_bucket(size_t bucket, const std::vector<size_t>& params);
  // Broadcasts parameters `indices` (into params_) each from its owner, left in flight:
  // one coalesced op per dtype, so the owners' transfers move at once.
  void send_parameters(const std::vector<size_t>& indices);
  // Waits for every broadcast in flight (one param_sync span).
  void wait_for_sent();

  DistributedDataParallel* overlapped_with_ = nullptr;
  std::vector<size_t> to_global_;                       // overlap_with: reducer index -> index into params_
  std::vector<std::shared_ptr<c10d::Work>> in_flight_;  // this step's broadcasts
  size_t in_flight_params_ = 0;
  int64_t in_flight_bytes_ = 0;
  std::optional<nn::StateDict> consolidated_;  // on the rank consolidate_state_dict() named
  int64_t stepped_in_hook_ = 0;
};

// The partition: owner rank of each parameter, given their element counts. Greedy by
// size: largest first (ties in index order), each to the rank with the fewest elements
// so far (ties to the lower rank).
std::vector<int> partition_parameters(const std::vector<int64_t>& numels, int world_size);

}  // namespace ddpscope::ddp
