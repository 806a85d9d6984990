// Trainer: builds a model, its data and optimizer from TrainOptions and runs training
// steps. The CLI drives it in one process; the multi-rank worker will wrap the model in
// DDP around the same steps.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "c10d/process_group.h"
#include "cpu_wait.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp/zero_redundancy_optimizer.h"
#include "nn/datasets.h"
#include "nn/module.h"
#include "nonfinite_watch.h"
#include "optim/optimizer.h"

namespace ddpscope::apps {

struct TrainOptions {
  std::string model = "mlp";  // mlp | transformer
  std::string data;           // mlp: regression | classification | digits; transformer: corpus
  std::string data_path;      // digits.csv(.gz) or a text file; empty: the default
  int64_t iters = 100;
  int64_t batch = 32;
  int64_t width = 128;  // MLP hidden width / transformer d_model
  int64_t depth = 3;    // MLP Linear layers / transformer blocks
  int64_t heads = 4;
  int64_t context = 32;
  uint64_t seed = 0;
  std::string optimizer;  // sgd | adam | adamw; empty: per-model default
  double lr = 0;          // 0: per-model default
  double momentum = 0.9;
  double weight_decay = 0.0;
  int threads = 1;
  std::string save_path;  // state dict written at the end when set
  // Multi-rank jobs: DistributedDataParallel, unless overlap is off (then gradients are
  // averaged in one allreduce after backward: the baseline DDP is measured against).
  bool overlap = true;
  double bucket_cap_mb = 25;
  // The first bucket's cap (PyTorch: 1 MiB, so the first allreduce starts early in
  // backward). Small models need it lower to get more than one bucket.
  double first_bucket_cap_mb = 1;
  // After training, time allreduces of 64 KiB up to the model's gradient bytes on the
  // job's process group (probes record them between two 'allreduce sweep' marks):
  // the measured cost per message size `ddpscope-cli advise` predicts with.
  bool measure_allreduce = false;
  // Before training, time each pair of neighbouring ranks and of hosts (link_test.h): the
  // links' ceiling, which collectives' bandwidth is read against.
  bool measure_links = false;
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
  bool static_graph = false;
  // DDP: step each bucket's parameters as soon as its reduction is done (PyTorch's
  // _register_fused_optim), so the optimizer overlaps the later buckets' communication.
  // The result is the same as one step after backward; without DDP it changes nothing.
  bool fused_optimizer = false;
  std::string comm_hook = "allreduce";  // allreduce | fp16 | bf16 | powersgd
  // Multi-rank: ZeroRedundancyOptimizer, each rank keeping the optimizer state of its
  // shard of the parameters only; with zero_overlap (PyTorch's overlap_with_ddp) each
  // bucket's shard is stepped as soon as the bucket is reduced, during backward.
  bool zero = false;
  bool zero_overlap = false;
  // MLP: a BatchNorm1d after each hidden Linear; sync_bn makes them SyncBatchNorm
  // (statistics over the global batch) in a multi-rank job.
  bool batch_norm = false;
  bool sync_bn = false;
  // Transformer, multi-rank: rank 0 serves the token table over RPC and the other ranks
  // train the rest under DDP (RemoteEmbeddingTrainer).
  bool remote_embedding = false;
  // For demonstrations of why DDP hangs: rank `unused_rank`'s MLP leaves its second layer
  // out of forward, so those parameters get no gradient there.
  int unused_rank = -1;
  // For demonstrations and tests of hang diagnosis: rank `stall_rank` sleeps
  // `stall_seconds` between the forward and the backward of iteration `stall_iteration`.
  int stall_rank = -1;
  int64_t stall_iteration = 0;
  double stall_seconds = 0;
  // For demonstrations and tests of why an iteration is slow: rank `slow_rank` sleeps
  // `slow_ms` in every iteration, in `slow_phase`: "outside_step" (before the iteration
  // starts, as an input pipeline that cannot keep up), "forward", "backward" (before the
  // backward pass, inside it; with `slow_layer`, when that layer's gradient arrives instead)
  // or "optimizer".
  int slow_rank = -1;
  std::string slow_phase;
  std::string slow_layer;  // a module path ("layers.2"), backward only; empty: before backward
  double slow_ms = 0;
  int64_t slow_from = 1;  // the first iteration it is slow in (a rank that becomes slow mid-run)
  // For demonstrations of DDP's replica check: rank `mismatch_rank` builds its model a
  // little larger (MLP one unit wider, transformer one block deeper).
  int mismatch_rank = -1;
  // Uneven inputs: rank `uneven_rank`'s data runs out after `uneven_iters` iterations.
  // Without `join` the other ranks then wait for it in their next allreduce.
  int uneven_rank = -1;
  int64_t uneven_iters = 0;
  // DDP's join (PyTorch's Join): a rank whose data ran out shadows the allreduces of the
  // ranks still training. The per-iteration loss is then each rank's own, not averaged:
  // an allreduce of the loss would meet a joined rank's shadow allreduce.
  bool join = false;
  // join with throw_on_early_termination: every rank stops as soon as one runs out of
  // data (what SyncBatchNorm needs: its collectives cannot be shadowed).
  bool join_throw = false;
};

// Parses --inject-uneven's "RANK:ITERATIONS" into `o`; throws with the reason.
void parse_uneven(const std::string& text, TrainOptions& o);

// Parses --inject-stall's "RANK:ITERATION:SECONDS" into `o`; throws with the reason.
void parse_stall(const std::string& text, TrainOptions& o);

// Parses --inject-slow's "RANK:PHASE:MS" into `o`; throws with the reason.
void parse_slow(const std::string& text, TrainOptions& o);

// The DDP options a job's flags ask for (--bucket-cap-mb, --find-unused-parameters, ...).
ddp::DdpOptions ddp_options_of(const TrainOptions& options);

// Fills model-dependent defaults and rejects inconsistent options with a message that
// names the option.
void validate_and_complete(TrainOptions& options);

struct StepResult {
  int64_t iteration = 0;  // 1-based
  double loss = 0;
  double seconds = 0;  // wall time of this step
};

class Trainer {
 public:
  // With a process group, every rank trains on its own data (seeded by rank) and the
  // model is wrapped in DistributedDataParallel (or, with overlap off, gradients are
  // averaged in one coalesced allreduce after backward).
  explicit Trainer(TrainOptions options, std::shared_ptr<c10d::ProcessGroup> group = nullptr);
  // Not movable: the fused optimizer's hook inside DDP's reducer points back at it.
  Trainer(Trainer&&) = delete;
  Trainer& operator=(Trainer&&) = delete;
  // One iteration; the loss is averaged over the group's ranks.
  StepResult step();
  // The allreduce cost sweep (TrainOptions::measure_allreduce); every rank calls it.
  void measure_allreduce_cost();
  void run_injected_loss_collective();
  const TrainOptions& options() const { return options_; }
  // The iterations this rank trains: --iters, fewer on an --inject-uneven rank.
  int64_t iterations() const;
  // With --join in a DDP job, the context the iterations run in (finish() after them);
  // null otherwise.
  std::unique_ptr<ddp::DistributedDataParallel::JoinContext> join_context();
  // The model being trained (the DDP wrapper in a DDP job).
  nn::Module& model() { return *model_; }
  // Samples per step over all ranks.
  int64_t samples_per_step() const { return options_.batch * (group_ ? group_->size() : 1); }
  std::string describe() const;  // one line: model, parameters, data, optimizer
  // Parameters the fused optimizer stepped during the last step's backward (0 without it).
  size_t parameters_stepped_in_backward() const { return fused_stepped_; }
  // The optimizer's state bytes on this rank (its shard's under --zero).
  int64_t optimizer_state_bytes() const;

 private:
  std::pair<Tensor, Tensor> next_batch();
  Tensor loss_of(const Tensor& output, const Tensor& target) const;

  // The constructor's model and data for --model mlp and --model transformer.
  void build_mlp(Generator& init_gen);
  void build_transformer(Generator& init_gen);

  // Parts of step(), in the order it runs them.
  void inject_stall_if_asked();
  void inject_slowdown_if_asked(const char* phase);
  void hook_slow_layer_if_asked();
  std::string ddp_parameters_without_gradients() const;
  void synchronize_gradients();
  void step_optimizer(int rank);
  double loss_over_ranks(double loss_value);
  void record_step_metrics(double loss_value, double seconds);
  static void enter_cpu_phase(probes::CpuPhase phase);
  // --fused-optimizer in a DDP job: the reducer steps each bucket's parameters.
  void install_fused_optimizer();

  TrainOptions options_;
  std::shared_ptr<c10d::ProcessGroup> group_;
  // Where the model, its batches and the loss live: the rank's GPU under NCCL.
  Device device_;
  Generator data_gen_;
  std::shared_ptr<nn::Module> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;  // null under --zero
  std::unique_ptr<ddp::ZeroRedundancyOptimizer> zero_;
  std::optional<nn::Dataset> dataset_;
  std::optional<nn::CharCorpus> corpus_;
  bool classification_ = false;
  int64_t iteration_ = 0;
  // Parameters the fused optimizer stepped in this iteration's backward: when none were
  // (no DDP, no_sync), step() steps them all after backward as usual.
  size_t fused_stepped_ = 0;
  NonFiniteWatch nonfinite_;
  std::vector<std::pair<std::string, Tensor>> named_parameters_;  // for nonfinite_
};

}  // namespace ddpscope::apps
