#include "distributed_data_parallel.h"

#include "sync_batch_norm.h"
#include "ddpscope/log.h"

#include <chrono>
#include <cstdio>

#include "autograd/grad_mode.h"
#include "ddpscope/plural.h"

namespace ddpscope::ddp {
namespace {
// Per parameter: dtype, ndim and up to 6 sizes (larger ranks are compared by numel).
constexpr int kSignatureWidth = 9;
}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<c10d::ProcessGroup> group, DdpOptions options)
    : module_(std::move(module)), group_(std::move(group)), options_(options) {
  DDPSCOPE_CHECK(module_ && group_, "DistributedDataParallel needs a module and a process group");
  DDPSCOPE_CHECK(options_.bucket_cap_mb > 0 && options_.first_bucket_cap_mb > 0,
                 "DistributedDataParallel: bucket caps must be positive, got bucket_cap_mb=", options_.bucket_cap_mb,
                 ", first_bucket_cap_mb=", options_.first_bucket_cap_mb);
  register_module("module", module_);
  verify_same_model_on_all_ranks();
  broadcast_state(/*parameters_too=*/true);
  std::vector<Tensor> params;
  std::vector<std::string> names;
  for (auto& [name, t] : named_parameters()) {
    params.push_back(t);
    names.push_back(name);
  }
  // At least one byte: tiny caps mean one parameter per bucket.
  const BucketCaps caps{std::max<size_t>(1, static_cast<size_t>(options_.first_bucket_cap_mb * (1 << 20))),
                        std::max<size_t>(1, static_cast<size_t>(options_.bucket_cap_mb * (1 << 20)))};
  reducer_ = Reducer::create(params, names, group_, assign_buckets(params, caps),
                             {.gradient_as_bucket_view = options_.gradient_as_bucket_view,
                              .find_unused_parameters = options_.find_unused_parameters,
                              .static_graph = options_.static_graph,
                              .caps = caps});
}

void DistributedDataParallel::verify_same_model_on_all_ranks() {
  const auto named = named_parameters();
  const Device dev = group_->tensor_device();
  Tensor count = Tensor::full({1}, static_cast<double>(named.size()), DType::I64, dev);
  std::vector<Tensor> counts(group_->size(), Tensor());
  for (auto& c : counts)
    c = Tensor::zeros({1}, DType::I64, dev);
  group_->allgather(counts, count)->wait();
  for (auto& c : counts)
    c = c.to(Device::cpu());
  for (int r = 0; r < group_->size(); ++r) {
    DDPSCOPE_CHECK(counts[r].item<int64_t>() == static_cast<int64_t>(named.size()), "DistributedDataParallel: rank ", r,
                   " has ", counts[r].item<int64_t>(), " parameters but rank ", group_->rank(), " has ", named.size(),
                   "; every rank must build the same model");
  }
  Tensor mine = Tensor::zeros({static_cast<int64_t>(named.size()), kSignatureWidth}, DType::I64);
  for (size_t i = 0; i < named.size(); ++i) {
    const Tensor& p = named[i].second;
    int64_t* row = mine.data<int64_t>() + i * kSignatureWidth;
    row[0] = static_cast<int64_t>(p.dtype());
    row[1] = p.dim();
    row[2] = p.numel();
    for (int64_t d = 0; d < std::min<int64_t>(p.dim(), 6); ++d)
      row[3 + d] = p.size(d);
  }
  std::vector<Tensor> all(group_->size(), Tensor());
  for (auto& a : all)
    a = Tensor::zeros(mine.sizes(), DType::I64, dev);
  group_->allgather(all, mine.to(dev))->wait();
  for (auto& a : all)
    a = a.to(Device::cpu());
  for (int r = 0; r < group_->size(); ++r) {
    for (size_t i = 0; i < named.size(); ++i) {
      const int64_t* theirs = all[r].data<int64_t>() + i * kSignatureWidth;
      const int64_t* ours = mine.data<int64_t>() + i * kSignatureWidth;
      if (!std::equal(ours, ours + kSignatureWidth, theirs)) {
        Shape shape(theirs + 3, theirs + 3 + std::min<int64_t>(theirs[1], 6));
        throw DDPSCOPE_ERROR("DistributedDataParallel: parameter ", named[i].first, " is ",
                             dtype_name(static_cast<DType>(theirs[0])), shape_str(shape), " on rank ", r, " but ",
                             named[i].second.describe(), " on rank ", group_->rank(),
                             "; every rank must build the same model");
      }
    }
  }
}

void DistributedDataParallel::broadcast_state(bool parameters_too, int root) {
  autograd::NoGradGuard no_grad;
  if (parameters_too) {
    for (auto& [name, t] : named_parameters())
      group_->broadcast(t, {.root = root})->wait();
  }
  for (auto& [name, t] : named_buffers())
    group_->broadcast(t, {.root = root})->wait();
}

void DistributedDataParallel::sync_final_model(bool last_joiner) {
  // The highest rank among the last to join: it trained through every iteration.
  Tensor flag =
      Tensor::full({1}, last_joiner ? static_cast<double>(group_->rank()) : -1.0, DType::I64, group_->tensor_device());
  group_->allreduce(flag, {.op = c10d::ReduceOp::Max})->wait();
  const int root = static_cast<int>(flag.to(Device::cpu()).item<int64_t>());
  if (root >= 0) broadcast_state(/*parameters_too=*/true, root);
}

int DistributedDataParallel::join_round(bool training) {
  Tensor flag = Tensor::full({1}, training ? 1.0 : 0.0, DType::I64, group_->tensor_device());
  group_->allreduce(flag)->wait();
  return static_cast<int>(flag.to(Device::cpu()).item<int64_t>());
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  if (join_.active && autograd::GradMode::is_enabled()) {
    DDPSCOPE_CHECK(reducer_->sync_enabled(), "DDP join: no_sync is not supported inside a join context");
    // First collective of every iteration: how many ranks still train.
    const int training = join_round(true);
    if (join_.throw_on_early_termination && training < group_->size()) {
      join_.terminated = true;
      throw EarlyTermination(
          detail::concat("DDP join: rank ", group_->rank(), " stops: ", count_of(group_->size() - training, "rank"),
                         " ran out of inputs (throw_on_early_termination)"),
          __FILE__, __LINE__);
    }
    if (!join_.divide_by_initial_world_size) reducer_->set_divisor(training);
  }
  if (options_.broadcast_buffers && group_->size() > 1) broadcast_state(/*parameters_too=*/false);
  const auto start = std::chrono::steady_clock::now();
  Tensor out = module_->forward(input);
  reducer_->mutable_last_iteration().forward_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (autograd::GradMode::is_enabled()) reducer_->prepare_for_backward({out});
  return out;
}

namespace {

// The name of the first SyncBatchNorm in `m` ("module.net.bn"), or "" when none.
std::string find_sync_batch_norm(const nn::Module& m, const std::string& name) {
  if (dynamic_cast<const SyncBatchNorm*>(&m)) return name;
  for (const auto& [child_name, child] : m.children())
    if (std::string found = find_sync_batch_norm(*child, name + "." + child_name); !found.empty()) return found;
  return {};
}

}  // namespace

DistributedDataParallel::JoinContext::JoinContext(DistributedDataParallel& ddp, bool divide_by_initial_world_size,
                                                  bool throw_on_early_termination)
    : ddp_(ddp) {
  DDPSCOPE_CHECK(!ddp.join_.active, "DDP join: a join context is already open");
  // A rank that ran out of inputs shadows DDP's allreduces, not the collectives a
  // SyncBatchNorm's forward and backward hold: the ranks still training would wait in them
  // (or meet a bucket's allreduce instead). Refused here, on every rank alike.
  if (!throw_on_early_termination) {
    if (const std::string bn = find_sync_batch_norm(*ddp.module_, "module"); !bn.empty()) {
      throw DDPSCOPE_ERROR("DDP join: ", bn,
                           " is a SyncBatchNorm, whose collectives a rank out of inputs cannot shadow; use "
                           "join(divide_by_initial_world_size, /*throw_on_early_termination=*/true), which ends "
                           "the loop on every rank as soon as one runs out");
    }
  }
  ddp.join_ = {true, divide_by_initial_world_size, throw_on_early_termination, false, {}};
}

void DistributedDataParallel::JoinContext::finish() {
  if (finished_) return;
  finished_ = true;
  JoinState& state = ddp_.join_;
  // Out of inputs: shadow the others' iterations until no rank trains.
  bool first_round = true, last_joiner = false;
  while (!state.terminated) {
    const int training = ddp_.join_round(false);
    if (first_round) last_joiner = training == 0;  // nobody trained on after this rank
    first_round = false;
    if (training == 0) break;
    if (state.throw_on_early_termination) {
      state.terminated = true;
      state.active = false;
      throw EarlyTermination(detail::concat("DDP join: rank ", ddp_.group_->rank(),
                                            " ran out of inputs while others still train (throw_on_early_termination)"),
                             __FILE__, __LINE__);
    }
    if (ddp_.options_.broadcast_buffers && ddp_.group_->size() > 1) ddp_.broadcast_state(false);
    ddp_.reducer_->shadow_iteration(!state.shadow_steps.empty());
    for (const auto& step : state.shadow_steps)
      step();
  }
  state.active = false;
  state.shadow_steps.clear();
  ddp_.reducer_->set_divisor(0);
  // PyTorch's join post-hook: a rank that joined early stopped updating its model, so every
  // rank takes the model of the last to join.
  if (!state.terminated && ddp_.group_->size() > 1) ddp_.sync_final_model(last_joiner);
}

DistributedDataParallel::JoinContext::~JoinContext() {
  try {
    finish();
  } catch (const std::exception& e) {
    log::error("DDP join failed while closing: {}", e.what());
  }
  ddp_.join_.active = false;
}

}  // namespace ddpscope::ddp
