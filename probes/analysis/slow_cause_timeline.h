// Each rank's timeline as the cause analysis (slow_cause.h) reads it: its iterations, its
// phases, when each gradient became ready, its collectives, and the collectives matched
// across ranks with each rank's arrival and its waits for the last one to arrive.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "overlap_analysis.h"
#include "run_store_reader.h"
#include "slow_cause.h"

namespace ddpscope::probes {

using PhaseTimes = std::array<double, kPhaseCount>;  // ms, by kPhaseNames

struct TimelineIteration {
  int64_t iteration = 0, begin = 0, end = 0;
};

struct TimelineCollective {
  int32_t name_id = 0, thread = 0;
  int64_t seq = 0, iteration = -1, begin = 0, end = 0;
  int64_t bytes = -1;  // as the op recorded them (-1: not said)
};

struct RankTimeline {
  int rank = 0;
  std::vector<TimelineIteration> iterations;              // by start
  std::array<std::vector<Interval>, kPhaseCount> phases;  // merged; [0] (outside the step) stays empty
  std::vector<TimelineCollective> collectives;            // by start
  std::vector<Interval> busy;                             // phases and collectives, merged
  std::vector<Interval> waits;                            // waiting for other ranks to arrive, merged
  std::vector<std::pair<int64_t, int64_t>> ready;         // (time, param) a gradient became ready, by time
  // Imported GPU traces (slow_cause_gpu.h): collectives on their NCCL kernels, and the time of
  // each stretch from the GPU's kernels by the phase that launched them.
  bool gpu = false;
  std::array<std::vector<Interval>, kPhaseCount> gpu_phases;  // merged
  std::vector<Interval> gpu_busy;                             // every kernel, copy and set, merged

  // Its time in [from, to] by phase; outside the step is what no phase, no collective and no
  // wait covers. (A rank computes on while it waits in a collective launched before.)
  PhaseTimes phase_times(int64_t from, int64_t to) const;
  // In backward within [from, to], each gradient's time to become ready after the one before
  // it (or backward's start): param -> ms.
  std::map<int64_t, double> gradient_gaps(int64_t from, int64_t to) const;
};

struct MatchedCollective {
  int64_t seq = 0, iteration = -1;
  std::vector<const TimelineCollective*> per_rank;  // by rank index
  // By rank index: when the rank could start it, at its call or, where the collective before
  // it was still running, when that one ended (a backend runs a group's collectives in
  // order: a call queued behind a wait is not an arrival).
  std::vector<int64_t> arrival;
  // By rank index: its wait for the last arrival while it had no phase of its own to run
  // (a wait under its own backward costs it nothing; on the GPU: no computation kernel), ms.
  std::vector<double> wait_ms;
};

struct RunTimelines {
  std::vector<RankTimeline> ranks;         // by rank
  std::vector<MatchedCollective> matched;  // collectives every rank ran, in order
  std::vector<int64_t> cut_short;          // iterations an error cut short on some rank
  int64_t first_iteration = 0, last_iteration = 0;
  bool imported = false;  // from profiler traces: iterations sampled from a longer job
};

// `layers`: read the gradients' ready times too (slow_cause.h). GPU kernels, where a rank has
// them, are read too.
RunTimelines read_timelines(RunStoreReader& run, bool layers);

}  // namespace ddpscope::probes
