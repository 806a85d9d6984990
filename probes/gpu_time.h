// GPU time of an imported PyTorch job, as Holistic Trace Analysis (HTA) defines it, so a
// user can check ddpscope's figures against HTA's on the same traces (README, "GPU
// time"). Kernels are classed as HTA classes them: communication (names ^nccl or with
// ncclKernel: Kind::GpuComm), memory (Memcpy, Memset), the rest computation. Per rank,
// over all of its device's streams:
//   computation, communication, memory = the merged time of each class's kernels;
//   busy           = the merged time of all kernels;
//   span           = first kernel's start to last kernel's end;
//   idle           = span - busy;
//   overlap        = (communication overlapping computation) / communication.
// The same per iteration (a kernel belongs to the iteration its launch ran in), and per
// iteration the straggler: the rank whose computation took longest, when it took
// noticeably longer than the others (the rest wait for it in their NCCL kernels).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

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

struct GpuStraggler {
  int64_t iteration = 0;
  int rank = -1;
  double computation_ms = 0, others_median_ms = 0, lag_ms = 0;
};

struct GpuTimeBreakdown {
  std::vector<GpuTimeSplit> ranks;       // by rank
  std::vector<GpuTimeSplit> iterations;  // by rank, then iteration
  std::vector<GpuStraggler> stragglers;  // by iteration
  bool empty() const { return ranks.empty(); }
};

// `min_fraction`: a straggler's computation must exceed the others' median by at least
// this share of the iteration's median span (someone is always slowest by a little).
GpuTimeBreakdown gpu_time_breakdown(RunStoreReader& run, double min_fraction = 0.05);

// stats --json's "gpu" object (null when the run has no GPU kernels).
nlohmann::ordered_json gpu_time_json(const GpuTimeBreakdown& b, bool with_iterations = true);

}  // namespace ddpscope::probes
