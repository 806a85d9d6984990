// GPU time of an imported PyTorch job, as Holistic Trace Analysis (HTA) computes it, so
// a user can check ddpscope's figures against HTA's on the same traces (docs/gpu.md, "GPU
// time", lists each rule and where HTA states it). Kernels are classed as HTA classes
// them: communication (names ^nccl or with ncclKernel: Kind::GpuComm), memory (Memcpy,
// Memset), the rest computation. Per rank, over all of its device's streams:
//   computation, communication, memory = the merged time of each class's kernels;
//   busy           = the merged time of all kernels;
//   span           = first kernel's start to last kernel's end;
//   idle           = span - busy;
//   overlap        = (communication overlapping computation) / communication.
// The per-rank figures take HTA's window: with two or more ProfilerStep#N names in the
// job, only kernels launched before the last step began (the profiler may stop before
// the last step's kernels ran), and, for traces with sub-microsecond times, each kernel
// from its start rounded up to its end rounded down to the microsecond.
// The same per iteration (a kernel belongs to the iteration its launch ran in), exact to
// the nanosecond: the figures overlap_analysis.h takes for every view. Idle time per stream splits as HTA's idle-time
// breakdown splits it: host wait (the kernel was launched after the stream ran dry), kernel wait (a gap under 30 us
// between back-to-back kernels) and other.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "overlap_analysis.h"
#include "run_store_reader.h"

namespace ddpscope::probes {

struct GpuTimeSplit {
  int rank = 0;
  int64_t iteration = -1;  // -1: the whole run
  int64_t kernels = 0;     // kernels, copies and sets
  double span_ms = 0, busy_ms = 0, idle_ms = 0;
  double computation_ms = 0, communication_ms = 0, memory_ms = 0;
  double comm_overlapping_compute_ms = 0;
  double overlap_ratio = 0;  // NaN without communication
};

// One stream's idle time, by cause (HTA's idle-time breakdown).
struct GpuStreamIdle {
  int rank = 0;
  int thread = 0;  // the stream's track in the run
  double host_wait_ms = 0, kernel_wait_ms = 0, other_ms = 0;
  int64_t kernels = 0;
  double total_ms() const { return host_wait_ms + kernel_wait_ms + other_ms; }
};

// Where a rank's GPU ran nothing at all (every stream idle): its longest stretches, each
// a place to look at in the timeline.
struct GpuGap {
  int rank = 0;
  int64_t begin_ns = 0, end_ns = 0;
  double ms() const { return static_cast<double>(end_ns - begin_ns) * 1e-6; }
};

// A stream's queue (HTA's queue length): kernels launched by the CPU and not yet finished
// on the GPU. Long queues mean the CPU runs ahead; a queue near 0 means the GPU waits for it.
struct GpuStreamQueue {
  int rank = 0;
  int thread = 0;  // the stream's track
  int64_t max_queued = 0;
  double mean_queued = 0;  // over time, from its first launch to its last kernel's end
};

struct GpuTimeBreakdown {
  std::vector<GpuTimeSplit> ranks;       // by rank, in HTA's window
  std::vector<GpuTimeSplit> iterations;  // by rank, then iteration
  std::vector<GpuStreamIdle> idle;       // by rank, then stream, in HTA's window
  std::vector<GpuStreamQueue> queues;    // by rank, then stream
  std::vector<GpuGap> longest_gaps;      // by rank, each rank's longest first
  bool empty() const { return ranks.empty(); }
};

// HTA's window of an imported job (the import config's "gpu_window"): whether the last
// ProfilerStep is left out, and per rank where it began and where the trace's
// microseconds fall on the run's clock.
struct GpuWindow {
  struct Rank {
    int64_t last_step_begin_ns = INT64_MIN;  // INT64_MIN: no ProfilerStep
    int64_t us_origin_ns = -1;               // -1: times are not rounded
  };
  bool leave_out_last_step = false;
  std::map<int, Rank> ranks;
};
nlohmann::json gpu_window_json(const GpuWindow& w);
GpuWindow gpu_window_from_config(const std::string& config_json);  // empty when absent

// `gaps_per_rank`: how many of each rank's longest gaps to keep.
GpuTimeBreakdown gpu_time_breakdown(RunStoreReader& run, size_t gaps_per_rank = 5);

// stats --json's "gpu" object (null when the run has no GPU kernels), with the run's
// stragglers (find_stragglers: one rule for every view).
nlohmann::ordered_json gpu_time_json(const GpuTimeBreakdown& b, const std::vector<Straggler>& stragglers,
                                     bool with_iterations = true);

}  // namespace ddpscope::probes
