// TimeBreakdown: where each rank's iteration time went, as HTA's temporal breakdown and
// Nsight's statistics put it. Each iteration splits into parts that add up to it:
//   forward, backward compute (backward less its finalize wait), exposed communication
//   (communication with no compute to hide it), optimizer, and idle (the rest: waiting
//   in finalize with nothing on the wire, data loading, gaps between phases).
// Hidden communication (run under compute) is shown beside them: it cost no time.
// GPU truth first: an iteration whose figures come from the GPU (overlap_analysis.h)
// splits into GPU computation, exposed communication (NCCL kernels with no computation
// kernel beside them) and idle / other (the rest of the iteration's time); forward,
// backward and optimizer, the CPU's phases, are left at 0 there.
#pragma once

#include <cstdint>
#include <vector>

#include "overlap_analysis.h"

namespace ddpscope::probes {

struct TimeBreakdown {
  int rank = 0;
  int64_t iteration = -1;  // -1: the mean over `iterations` iterations
  int64_t iterations = 1;
  double iteration_ms = 0;
  double forward_ms = 0, backward_ms = 0, exposed_comm_ms = 0, optimizer_ms = 0, idle_ms = 0;
  double hidden_comm_ms = 0;
  // Of exposed_comm_ms, the time spent waiting for other ranks to arrive (arrival_wait.h);
  // wait_iterations: how many of the iterations knew it (0: not known, as on one rank).
  double exposed_wait_ms = 0;
  int64_t wait_iterations = 0;
  bool gpu = false;
  double computation_ms = 0;  // gpu: the computation kernels' merged time
  bool straggler = false;     // iteration rows: this rank started its allreduces last
  int64_t straggled = 0;      // mean rows: in how many iterations it was the straggler
};

// One row per rank and iteration, by rank then iteration.
std::vector<TimeBreakdown> breakdown_by_iteration(const RunAnalysis& analysis);
// One row per rank: the mean of its iterations (`by_iteration`'s rows), leaving out the
// first (warm-up) when there are more than two.
std::vector<TimeBreakdown> breakdown_by_rank(const std::vector<TimeBreakdown>& by_iteration);
// The rank that was the straggler most often (-1: none).
int main_straggler(const std::vector<TimeBreakdown>& by_rank);

}  // namespace ddpscope::probes
