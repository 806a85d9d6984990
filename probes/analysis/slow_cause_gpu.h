// GPU truth for the cause analysis (slow_cause.h), on imported traces whose ranks ran GPU
// kernels: a collective's arrival is its NCCL kernel's start (the other ranks wait inside
// their kernels), and a stretch's time goes to the phase whose CPU span launched each
// computation kernel, or to "host" where the GPU ran nothing at all (it waited for the CPU to
// launch work). Kernels are tied to their launches by the trace's correlation ids.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::probes {

struct RankTimeline;

struct GpuLaunch {
  int64_t t = 0;
  int32_t thread = 0;
  int64_t correlation = 0;
};

// What a rank's trace says about its GPU, as read.
struct GpuSpans {
  std::vector<GpuLaunch> launches;                      // CUDA runtime calls with a correlation id
  std::map<int64_t, std::pair<int64_t, int64_t>> nccl;  // correlation -> the NCCL kernel's [begin, end]
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> compute;  // (correlation, [begin, end])
  std::vector<std::pair<int64_t, int64_t>> other;                        // copies and sets: the GPU is busy, no phase
  bool any() const { return !nccl.empty() || !compute.empty(); }
};

// The GPU kinds the analysis reads beside the CPU's.
void add_gpu_span(GpuSpans& gpu, const CompactSpan& s);
// Moves each collective onto its NCCL kernel (the launch inside the collective's CPU span, on
// its thread) and fills the rank's GPU phases; a rank without kernels is left as it was.
void apply_gpu_truth(RankTimeline& r, GpuSpans&& gpu);

}  // namespace ddpscope::probes
