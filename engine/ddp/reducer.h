// Reducer: DDP's gradient synchronisation, overlapped with backward.
//
// Parameters are packed into buckets (bucket_assigner.h), each backed by one flat
// buffer. A post-accumulate-grad hook per parameter copies its gradient into the
// bucket (or, with gradient_as_bucket_view, makes .grad a view into the bucket so no
// copy is needed) and marks it ready; when every gradient of a bucket is ready and all
// earlier buckets are launched, the bucket's allreduce (average) starts asynchronously
// while backward goes on. Buckets launch in index order, the same on every rank. At the
// end of backward (a queued engine callback) the reducer waits for all buckets and
// writes the averaged gradients back, so every rank holds the same .grad.
//
// Thread-safety: driven by the training thread and the autograd engine on it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bucket_assigner.h"
#include "c10d/process_group.h"
#include "comm_hook.h"
#include "dist_autograd/context.h"

namespace ddpscope::ddp {

// What DDP reports about its last iteration (like PyTorch's DDP logging data). Times in
// milliseconds on this rank.
struct IterationStats {
  int64_t iteration = 0;           // backward passes completed so far
  double forward_ms = 0;           // filled by DistributedDataParallel
  double backward_compute_ms = 0;  // end of forward -> last gradient ready
  // Communication time is the union of the buckets' reduction intervals; the part of
  // it before the last gradient was ready overlapped with backward (docs/run-files.md, Definitions).
  double backward_comm_ms = 0;
  double overlap_ms = 0;
  std::vector<size_t> bucket_bytes;
  std::vector<size_t> ready_order;  // parameter indices
  std::vector<std::string> unused_parameters;
  // Gradients copied into their bucket slot; the others were computed straight into it
  // (a Linear weight whose .grad was empty) or accumulated there (gradient_as_bucket_view).
  size_t gradients_copied = 0;
  // overlap_ms / backward_comm_ms: 1 when all communication hid behind backward.
  double overlap_ratio() const { return backward_comm_ms > 0 ? overlap_ms / backward_comm_ms : 0; }
};

struct ReducerOptions {
  bool gradient_as_bucket_view = false;
  bool find_unused_parameters = false;
  // After the first iteration, rebuild the buckets once from the order in which
  // gradients actually became ready (rank 0's order, so all ranks agree). Skipped with
  // find_unused_parameters, where the order may change from one iteration to the next.
  bool rebuild_buckets = true;
  // The graph is the same every iteration: unused parameters are found once (no
  // find_unused_parameters needed) and the used-parameter map is shared once.
  bool static_graph = false;
  BucketCaps caps;
};

class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  // Use create(): the hooks hold a weak reference to the reducer.
  static std::shared_ptr<Reducer> create(std::vector<Tensor> params, std::vector<std::string> names,
                                         std::shared_ptr<c10d::ProcessGroup> group, std::vector<BucketSpec> buckets,
                                         ReducerOptions options);
  Reducer(std::vector<Tensor> params, std::vector<std::string> names, std::shared_ptr<c10d::ProcessGroup> group,
          std::vector<BucketSpec> buckets, ReducerOptions options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Called after each forward with its outputs: checks the previous backward finished,
  // and with find_unused_parameters marks parameters the outputs do not depend on.
  void prepare_for_backward(const std::vector<Tensor>& outputs);
  // Under no_sync, gradients accumulate locally and nothing is communicated.
  void set_sync_enabled(bool enabled) { sync_enabled_ = enabled; }
  // Replaces the default averaging allreduce; only before the first backward.
  void register_comm_hook(CommHook hook);
  // Gradients are summed over ranks and divided by this (default: the world size).
  // join() sets it to the number of ranks still training when asked to.
  void set_divisor(int divisor) { divisor_ = divisor; }
  // On a rank that ran out of inputs (join): issue exactly the collectives a training
  // rank's backward issues, with zero gradients, so the others do not wait forever.
  // With write_gradients the reduced buckets (the training ranks' average) go into this
  // rank's .grad as a backward's would: a joined optimizer (ZeRO) steps its shard with them.
  void shadow_iteration(bool write_gradients = false);
  bool sync_enabled() const { return sync_enabled_; }
  // Called on the training thread as soon as a bucket's averaged gradients are in its
  // parameters' .grad, while later buckets may still be reducing: DDP's fused optimizer
  // (PyTorch's _register_fused_optim) steps those parameters there. Buckets come in index
  // order, every parameter of every launched bucket once per synchronised backward; with
  // find_unused_parameters (the used map is shared after all buckets) they all come at the
  // end. Not called for a backward inside a distributed autograd context, whose gradients
  // go to the context rather than .grad, nor under no_sync or for a joined rank's shadow.
  using BucketReducedHook = std::function<void(size_t bucket, const std::vector<size_t>& params)>;
  void set_bucket_reduced_hook(BucketReducedHook hook) { bucket_reduced_hook_ = std::move(hook); }

  // The parameters, in the order bucket specs and hooks index them.
  const std::vector<Tensor>& parameters() const { return params_; }
  const std::vector<BucketSpec>& bucket_specs() const { return specs_; }
  // The assignment before the rebuild (equal to bucket_specs() until it happens).
  const std::vector<BucketSpec>& initial_bucket_specs() const { return initial_specs_; }
  bool buckets_rebuilt() const { return rebuilt_; }
  // Parameter indices in the order their gradients became ready in the last backward.
  const std::vector<size_t>& ready_order() const { return ready_order_; }
  // Parameters found unused in the last backward (find_unused_parameters only).
  const std::vector<size_t>& unused_parameters() const { return unused_; }
  // After a synchronised backward that left buckets unlaunched (parameters without
  // gradients, no find_unused_parameters): their names, as the next forward would report
  // them; empty otherwise. A training loop can fail here, before its next collective
  // meets the other ranks' pending allreduce.
  std::string parameters_without_gradients() const;
  // How often the reducer walked the autograd graph looking for unused parameters.
  int64_t graph_walks() const { return graph_walks_; }
  // Statistics of the last completed backward.
  const IterationStats& last_iteration() const { return stats_; }
  IterationStats& mutable_last_iteration() { return stats_; }

 private:
  // The distributed autograd context of the backward in progress (null: a local one).
  std::shared_ptr<dist_autograd::DistAutogradContext> dist_ctx_;

  struct Bucket {
    BucketSpec spec;
    Tensor contents;                       // flat buffer, spec.bytes long
    std::vector<Tensor> views;             // per parameter, shaped like it
    size_t pending = 0;                    // gradients still to arrive this backward
    std::shared_ptr<c10d::Future> result;  // the reduced contents, once launched
    std::shared_ptr<c10d::Work> work;      // default reduction only: exact op times
    std::chrono::steady_clock::time_point launched_at;
    // When the result completed (stamped by the completing thread).
    std::shared_ptr<std::atomic<std::chrono::steady_clock::time_point>> done_at;
  };
  struct Locator {
    size_t bucket = 0;
    size_t slot = 0;
  };

  void build_buckets(std::vector<BucketSpec> specs);
  void record_assignment();  // to the probes
  // Rebuilds once, at the first forward after an iteration; every rank decides alike.
  void maybe_rebuild_buckets();
  void rebuild_buckets();
  std::shared_ptr<c10d::Future> reduce_bucket(size_t index);
  void reduce_used_map(std::vector<bool>& used);
  void install_hooks();
  void autograd_hook(size_t param);
  void mark_variable_ready(size_t param);
  void launch_ready_buckets();
  void finalize_backward();
  // At the first gradient of a backward: the parameters its forward did not use are
  // ready, with the .grad they have or zeros.
  void mark_unused_ready();
  // Offers every parameter its bucket slot as the destination of its next gradient
  // (autograd/accumulate_grad.h), or withdraws the offers.
  void offer_destinations(bool offer);
  // Without gradient_as_bucket_view, .grad may have been computed straight into the
  // bucket: before the bucket is written, .grad gets its own copy.
  void detach_grad_from_bucket(size_t param);
  // A parameter's gradient: its .grad, or inside a distributed autograd context (DDP
  // with RPC, seed 004) the context's, which DDP reads and writes its average back to.
  Tensor grad_of(size_t param) const;
  void set_grad_of(size_t param, Tensor grad);
  // Averages a reduced bucket into its parameters' .grad (skipping globally unused ones).
  void write_back(Bucket& b, const std::vector<bool>& globally_used);
  void bucket_reduced(Bucket& b);  // calls the BucketReducedHook, if any
  std::string names_of(const std::vector<size_t>& params) const;

  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  std::shared_ptr<c10d::ProcessGroup> group_;
  ReducerOptions options_;
  std::vector<BucketSpec> specs_;
  std::vector<BucketSpec> initial_specs_;
  bool rebuilt_ = false;
  bool rebuild_attempted_ = false;
  int64_t completed_iterations_ = 0;  // backward passes this group finished (shadowed too)
  size_t gradients_copied_ = 0;       // this backward (IterationStats::gradients_copied)
  bool offered_ = false;              // gradient destinations offered (offer_destinations)
  int divisor_ = 0;                   // 0: the world size
  using TimePoint = std::chrono::steady_clock::time_point;
  TimePoint prepared_at_, last_ready_at_;
  IterationStats stats_;
  void record_stats();
  std::vector<size_t> find_unused(const std::vector<Tensor>& outputs);
  int64_t graph_walks_ = 0;
  bool static_unused_known_ = false;
  std::vector<size_t> static_unused_;
  std::vector<bool> static_globally_used_;
  std::vector<Bucket> buckets_;
  std::vector<Locator> locators_;
  std::vector<bool> ready_;
  std::vector<bool> locally_used_;
  std::vector<size_t> ready_order_;
  std::vector<size_t> unused_;
  size_t next_bucket_ = 0;
  bool backward_in_progress_ = false;  // between the first hook and finalize
  bool expect_backward_ = false;       // prepared by a forward
  bool finished_last_ = true;          // the previous backward reduced every bucket
  bool sync_enabled_ = true;
  CommHook hook_;
  BucketReducedHook bucket_reduced_hook_;
};

}  // namespace ddpscope::ddp
