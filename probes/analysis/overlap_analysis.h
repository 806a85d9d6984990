// The overlap analysis (docs/run-files.md, Definitions), used by `ddpscope-cli stats`, the benchmarks and
// the desktop app:
//   comm time     = union of a rank's allreduce spans in an iteration (and ZeRO's
//                   parameter broadcasts after the step: param_sync);
//   compute       = union of its forward and backward spans, minus the finalize spans
//                   (waiting for buckets at the end of backward is not compute);
//   exposed comm  = the part of comm not covered by compute;
//   overlap ratio = 1 - exposed / comm (NaN when there was no communication).
// GPU truth first: where a rank ran GPU kernels in an iteration (imported traces), its
// compute and comm are those of the GPU, not the CPU's launches and enqueues: the merged
// time of the computation kernels and of the NCCL kernels launched in the iteration, all
// streams together, as gpu_time.h classes them. The CPU's figures stay beside them
// (cpu_*), and each DDP bucket's allreduce is timed by the NCCL kernel it launched.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::probes {

struct Interval {
  int64_t begin = 0, end = 0;
};

// Sorted, non-overlapping cover of `intervals`.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
int64_t total_length(const std::vector<Interval>& merged);
// The parts of `a` not covered by `b` (both merged).
std::vector<Interval> subtract_intervals(const std::vector<Interval>& a, const std::vector<Interval>& b);

// GPU kernels by class, each class merged, and all of them together (busy): what both
// the per-iteration GPU figures here and gpu_time.h start from.
struct MergedKernels {
  std::vector<Interval> computation, communication, memory, busy;
};
MergedKernels merge_kernel_classes(std::vector<Interval> computation, std::vector<Interval> communication,
                                   std::vector<Interval> memory);

struct IterationAnalysis {
  int rank = 0;
  int64_t iteration = 0;
  int64_t t_begin_ns = 0, t_end_ns = 0;  // the iteration span
  double iteration_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  double compute_ms = 0, comm_ms = 0, exposed_comm_ms = 0;
  double overlap_ratio = 0;       // NaN without communication
  std::vector<Interval> exposed;  // where communication ran with no compute to hide it
  // The figures above come from the rank's GPU kernels (see the top of this file).
  bool from_gpu = false;
  double gpu_span_ms = 0;  // first kernel's start to last kernel's end
  double gpu_idle_ms = 0;  // within it, the GPU ran nothing
  double gpu_memory_ms = 0;
  // The CPU's view: launch and enqueue time (equal to the figures above without a GPU).
  double cpu_compute_ms = 0, cpu_comm_ms = 0, cpu_exposed_comm_ms = 0;
  double cpu_overlap_ratio = 0;
  // Exposed communication split into waiting for the other ranks to arrive and moving
  // data (arrival_wait.h); known where every rank reduced this iteration's buckets.
  bool wait_known = false;
  double exposed_wait_ms = 0, exposed_transfer_ms = 0;
};

struct BucketTiming {
  int rank = 0;
  int64_t iteration = 0;
  int bucket = 0;
  int64_t bytes = 0;
  int64_t ready_ns = -1;             // every gradient arrived
  int64_t start_ns = 0, end_ns = 0;  // the allreduce
  // Time the end of backward spent waiting for this bucket (its allreduce past the
  // start of finalize).
  double wait_ms = 0;
  bool gpu = false;  // start and end are its NCCL kernel's
  // The last rank's start of this allreduce and how many ranks reduced it, once every rank
  // of the analysis did (split_wait_and_transfer; -1 and 0 before): its transfer is from
  // there to end_ns (collective_bandwidth.h).
  int64_t last_arrival_ns = -1;
  int group_ranks = 0;
  // False when the run holds fewer ranks than the job had: the last arrival is the last of
  // those recorded, so the transfer may hold waiting for the others (its rate a lower bound).
  bool every_arrival = true;
};

// An iteration whose span an error cut short (kEndedByError: a collective's timeout
// unwound it): left out of every mean, named instead.
struct CutShortIteration {
  int rank = 0;
  int64_t iteration = 0;
  int64_t t_begin_ns = 0, t_end_ns = 0;  // until the error
};

struct RunAnalysis {
  std::vector<IterationAnalysis> iterations;  // by rank, then iteration
  std::vector<CutShortIteration> cut_short;   // by rank, then iteration
  std::vector<BucketTiming> buckets;          // by rank, iteration, bucket
  // Where extend_analysis resumes: the first row of an iteration not finished yet.
  int64_t resume_rowid = 0;
};

// An iteration every mean leaves out: a rank's first when it has three or more (it warms
// caches and builds buckets).
bool is_warm_up(const RunAnalysis& analysis, const IterationAnalysis& it);

// Per rank, the sums over its iterations past warm-up, which `stats` and the Summary show
// as means. `cpu_*`: the CPU's view of communication (the same as comm and exposed where
// the CPU timed them); `gpu`: some iteration's figures came from the GPU.
struct RankSums {
  int n = 0;
  bool gpu = false;
  double iteration = 0, compute = 0, comm = 0, exposed = 0, cpu_comm = 0, cpu_exposed = 0, gpu_idle = 0;
  int wait_n = 0;                                 // of the n, the iterations whose exposed wait is known
  double exposed_wait = 0, exposed_transfer = 0;  // over those wait_n
};
// `leave_out`: iterations no mean may carry (stalls the cause analysis named, slow_cause.h).
std::map<int, RankSums> rank_sums(const RunAnalysis& analysis, const std::set<int64_t>& leave_out = {});

// rank -1: every rank (and then each iteration's exposed wait and transfer, arrival_wait.h).
RunAnalysis analyze_run(RunStoreReader& run, int rank = -1);
// Adds the iterations a growing run finished since `analysis` (of every rank) was made,
// reading only the rows from its resume point on.
void extend_analysis(RunAnalysis& analysis, RunStoreReader& run);

// The one straggler rule of every view and of the CLI. Per iteration with two or more
// ranks, the rank the others waited for, and by how much:
//   on the GPU (iterations from_gpu): the rank whose computation kernels took longest,
//     by its computation minus the other ranks' median (the others wait for it inside
//     their NCCL kernels);
//   else: the rank whose first bucket allreduce started last, by its start minus the
//     earliest rank's (the others wait for it in that collective).
// Only lags of at least `min_fraction` of the iteration's longest time count: someone is
// always last, and a few microseconds of it is noise, not a straggler.
struct Straggler {
  int64_t iteration = 0;
  int rank = -1;
  double lag_ms = 0;
  bool gpu = false;
  double computation_ms = 0, others_median_ms = 0;  // gpu: the rank's and the others'
};
std::vector<Straggler> find_stragglers(const RunAnalysis& analysis, double min_fraction = 0.05);

}  // namespace ddpscope::probes
