// DistributedDataParallel: wraps a module so that training on N ranks behaves like
// training one model on the union of the ranks' batches (PyTorch's DDP).
//
//   auto pg = c10d::init_process_group({.backend = "mpi"});
//   auto model = std::make_shared<nn::Mlp>(config);
//   ddp::DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = 25});
//   loss_fn(ddp.forward(x), y).backward();   // gradients averaged over the ranks
//   optimizer.step();                        // identical on every rank
//
// Construction checks that every rank has the same parameters (count, shapes, dtypes)
// and broadcasts parameters and buffers from rank 0. Parameters are renamed
// "module.<name>" as in PyTorch.
#pragma once

#include <functional>
#include <memory>

#include "c10d/process_group.h"
#include "nn/module.h"
#include "reducer.h"

namespace ddpscope::ddp {

struct DdpOptions {
  double bucket_cap_mb = 25;
  double first_bucket_cap_mb = 1;
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
  bool broadcast_buffers = true;  // rank 0's buffers to every rank before each forward
  // The same parameters are used in every iteration: unused ones are found once.
  bool static_graph = false;
};

class DistributedDataParallel : public nn::Module {
 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<c10d::ProcessGroup> group,
                          DdpOptions options = {});
  std::string type_name() const override { return "DistributedDataParallel"; }
  Tensor forward(const Tensor& input) override;

  nn::Module& module() { return *module_; }
  const std::vector<BucketSpec>& buckets() const { return reducer_->bucket_specs(); }
  Reducer& reducer() { return *reducer_; }
  // Timings, buckets, gradient-ready order and unused parameters of the last iteration.
  const IterationStats& last_iteration() const { return reducer_->last_iteration(); }
  // See comm_hook.h; call before the first backward.
  void register_comm_hook(CommHook hook) { reducer_->register_comm_hook(std::move(hook)); }

  // While a guard lives, backward passes accumulate gradients locally without
  // communicating; the first backward after it synchronises the sum.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(Reducer& r) : reducer_(r), previous_(r.sync_enabled()) { r.set_sync_enabled(false); }
    ~NoSyncGuard() { reducer_.set_sync_enabled(previous_); }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    Reducer& reducer_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*reducer_); }

  // Uneven inputs (PyTorch's join): every rank trains on its own inputs inside the
  // context and then calls finish(); a rank that finished early takes part in the
  // collectives of the ranks still training, with zero gradients, until all are done,
  // so no rank hangs; then every rank takes the model of the last rank to finish. Gradients are divided by the initial
  // world size, or with divide_by_initial_world_size=false by the number of ranks still training. With
  // throw_on_early_termination every rank throws as soon as one runs out of inputs.
  // While the context is open every forward with grad mode on must be followed by a
  // backward, and no_sync is not supported.
  // What every rank throws under join(..., throw_on_early_termination=true) once one rank
  // runs out of inputs: catch it to end the training loop on all ranks alike.
  class EarlyTermination : public Error {
   public:
    using Error::Error;
  };

  class JoinContext {
   public:
    JoinContext(DistributedDataParallel& ddp, bool divide_by_initial_world_size, bool throw_on_early_termination);
    ~JoinContext();  // calls finish() if needed; errors are reported on stderr
    JoinContext(const JoinContext&) = delete;
    JoinContext& operator=(const JoinContext&) = delete;
    void finish();
    // Joinables beside DDP (PyTorch's Join([model, optimizer])): after each iteration this
    // rank shadows, it gets the training ranks' averaged gradients in .grad and runs
    // `step`, which must issue the collectives the training ranks' step issues (ZeRO's
    // parameter broadcasts).
    void add_shadow_step(std::function<void()> step) { ddp_.join_.shadow_steps.push_back(std::move(step)); }

   private:
    DistributedDataParallel& ddp_;
    bool finished_ = false;
  };
  [[nodiscard]] std::unique_ptr<JoinContext> join(bool divide_by_initial_world_size = true,
                                                  bool throw_on_early_termination = false) {
    return std::make_unique<JoinContext>(*this, divide_by_initial_world_size, throw_on_early_termination);
  }

 private:
  void verify_same_model_on_all_ranks();
  // One join round: every rank says whether it still trains; returns how many do.
  int join_round(bool training);
  void broadcast_state(bool parameters_too, int root = 0);
  // After join: every rank takes the parameters and buffers of the last rank to join.
  void sync_final_model(bool last_joiner);

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<c10d::ProcessGroup> group_;
  DdpOptions options_;
  std::shared_ptr<Reducer> reducer_;
  struct JoinState {
    bool active = false;
    bool divide_by_initial_world_size = true;
    bool throw_on_early_termination = false;
    bool terminated = false;  // a rank ran out of inputs under throw_on_early_termination
    std::vector<std::function<void()>> shadow_steps;
  } join_;
};

}  // namespace ddpscope::ddp
