// Bucket advice from one recorded run: predicts a DDP job's iteration time
// and overlap for other bucket_cap_mb values, from what the run recorded, without
// running them (Horovod's autotune finds a cap by trial instead).
//
// What the run gives, per iteration of one rank: when backward started and when its
// compute ended (finalize began), when each parameter's gradient was ready and its
// size, the time before backward (forward) and after it (optimizer), and every
// allreduce the process group ran, with its bytes and duration. From those ops, the
// allreduce cost on this cluster: a fixed cost (the median of the tiny ops) plus a cost
// per byte (from the ops that ran with no compute beside them), and how much slower
// communication runs while backward computes on the same cores, and how much slower
// backward computes while communication runs. Gradient-ready times
// are taken from the last rank to reach each gradient: a rank behind holds the others'
// allreduce back.
//
// For a cap, the gradients are packed into buckets in the order they became ready (as
// the reducer rebuilds them: a bucket closes once it holds at least its cap, the first
// at the first-bucket cap), each bucket's allreduce starts when its last gradient is
// ready on every rank and the previous allreduce is done (plus the dispatch delay),
// backward's compute and the allreduces each slower while the other runs (bucket_replay.h), and
// the iteration is forward + the later of
// (backward's compute, the last allreduce) + the write-back and optimizer that followed.
// With the fused optimizer (train --fused-optimizer) each bucket is stepped instead once
// its allreduce is done and backward's compute is over, one after another at the run's
// optimizer rate per byte: only the steps after the last allreduce add to the iteration.
// What the simulation misses at the recorded cap (measured minus simulated) is added to
// every cap's prediction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::probes {

struct AllreduceCost {
  double fixed_ns = 0;          // per allreduce, whatever its size
  double ns_per_byte = 0;       // with nothing else on the cores
  double compute_slowdown = 1;  // the rate while backward computes beside it (0 < s <= 1)
  int free_samples = 0, contended_samples = 0;
  // Backward's compute speed while an allreduce runs beside it (0 < r <= 1): they share
  // the cores. From layers of about the same size computed with and without one beside.
  double compute_rate_beside_comm = 1;
  int compute_pairs = 0;
  // (bytes, median ns) measured by train --measure-allreduce, by size; when present the
  // cost of a size is read off it (linear between sizes, beyond the largest at
  // ns_per_byte), which catches the per-op overheads an affine fit misses.
  std::vector<std::pair<double, double>> measured;
  // Training's time for an allreduce over the sweep's, for the same size (the median
  // over the run's ops that ran with no compute beside them): the sweep gives how the
  // cost grows with size, the run its level under training. A ratio, not an added cost
  // per op: what differs (the link's share, the cores) scales with the bytes, and a
  // per-op figure taken from a few large ops multiplied across many small buckets.
  double training_factor = 1;
  int training_samples = 0;
  // From a bucket being ready on every rank with the communication worker free to its
  // allreduce starting (waking the worker, handing the bucket over): the median over
  // the run's bucket allreduces.
  double dispatch_ns = 0;
  int dispatch_samples = 0;
  double cost_ns(double bytes) const;
  double sweep_ns(double bytes) const;  // the measured table alone (needs 2 sizes)
};

struct CapPrediction {
  double cap_mb = 0;
  int buckets = 0;
  double iteration_ms = 0;        // median over the iterations used
  double fused_iteration_ms = 0;  // the same with --fused-optimizer
  double comm_ms = 0, exposed_comm_ms = 0;
  double overlap_ratio = 0;
  bool recorded = false;    // the run's own cap
  double measured_ms = -1;  // the run's median iteration, for the recorded cap
};

struct BucketAdvice {
  int rank = 0;
  int iterations = 0;  // used (after the warm-up)
  double first_bucket_cap_mb = 1;
  double recorded_cap_mb = 0;
  bool recorded_fused = false;  // the run had --fused-optimizer
  // A PyTorch job (torchrun, collect): the advice is said in DDP's own arguments, not in
  // ddpscope's trainer's flags, which its user has no use for.
  bool torch = false;
  // The run used ZeRO (it recorded a partition): its step is ZeRO's, which the fused
  // optimizer does not combine with, so the fused predictions are no advice for it.
  bool zero = false;
  AllreduceCost cost;
  // Measured minus simulated at the recorded cap, added to every prediction (the
  // recorded point lies on the predicted curve).
  double calibration_ns = 0;
  std::vector<CapPrediction> predictions;  // by cap
  // The recorded cap if within 0.5% of the fastest prediction, else the largest cap that is.
  double best_cap_mb = 0;
  double best_fused_cap_mb = 0;    // with --fused-optimizer
  std::vector<std::string> notes;  // what limits the advice (few samples, ...)
};

// The cap to advise among `predictions` (by cap), by their iteration times with or
// without the fused optimizer: the recorded cap when it predicts within 0.5% of the
// fastest, else the largest cap that does. Never one predicted slower than the recorded.
double best_cap(const std::vector<CapPrediction>& predictions, bool fused);

// The advice in the user's terms: "train --bucket-cap-mb 4" for our trainer's runs,
// "DistributedDataParallel(..., bucket_cap_mb=4)" for a PyTorch job's; the same with the
// optimizer stepped per bucket ("--fused-optimizer"; PyTorch's DDP._register_fused_optim);
// and the name of that variant ("with --fused-optimizer", "optimizer in backward").
std::string cap_setting(const BucketAdvice& a, double cap_mb);
std::string fused_cap_setting(const BucketAdvice& a, double cap_mb);
std::string fused_variant_name(const BucketAdvice& a);
// `advise`'s last lines: the best cap, and the best with the optimizer stepped per bucket
// (not for ZeRO), each with the setting that chooses it.
std::string best_caps_text(const BucketAdvice& a);

// Throws ddpscope::Error when the run has no DDP iterations with gradient-ready marks.
// `caps_mb` empty: 0.25 to 100 MiB and the recorded cap. `warmup`: iterations skipped
// (the first builds and rebuilds the buckets).
BucketAdvice advise_buckets(RunStoreReader& run, const std::vector<double>& caps_mb = {}, int rank = 0, int warmup = 5);

}  // namespace ddpscope::probes
