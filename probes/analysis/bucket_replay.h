// One recorded DDP iteration replayed at another bucket cap: backward's compute and the
// communication worker's allreduces advance side by side, each slower while the other
// runs (they share the cores: on 2 cores a 2 Gbit/s allreduce stretched a layer's
// backward from 5.7 to 9 ms, and the compute slowed the allreduce to 80% of its speed).
//
// Backward is held as the work between one gradient being ready and the next, in the ns
// it takes with no allreduce beside it, so a cap that runs fewer allreduces beside
// backward gets a shorter backward: the recorded times, stretched by the recorded cap's
// allreduces, are not the compute's own.
#pragma once

#include <cstdint>
#include <vector>

#include "bucket_advice.h"

namespace ddpscope::probes {

// One iteration of the rank, times in ns from backward's start.
struct IterationInputs {
  int64_t iteration = 0;
  double pre_ns = 0;        // iteration start -> backward start (forward, data)
  double compute_end = 0;   // backward's compute done (finalize began), as recorded
  double writeback_ns = 0;  // after the later of compute and the last allreduce, until backward ended
  double tail_ns = 0;       // backward end -> iteration end (optimizer)
  // The optimizer's time, and how much of it the two spans above hold: all of tail_ns's
  // when it stepped after backward, the part after the last allreduce of writeback_ns's
  // when the run had --fused-optimizer. Predictions take it out and put it back their way.
  double optimizer_ns = 0, optimizer_in_tail_ns = 0, optimizer_in_writeback_ns = 0;
  double measured_ns = 0;  // the iteration's length
  // Per gradient, in the order this rank had them: its bytes, its time on this rank and
  // on the last rank to have it (a bucket's allreduce cannot start before every rank has
  // all of it), and the compute since the gradient before it, in ns with no allreduce
  // beside it.
  struct Ready {
    int64_t bytes = 0;
    double own = 0, all = 0;
    double work = 0;
  };
  std::vector<Ready> ready;
  double tail_work = 0;  // from the last gradient to compute_end, in ns with no allreduce beside it
};

// One iteration at a cap: times in ns.
struct Simulated {
  double iteration = 0, comm = 0, exposed = 0;
  double fused_iteration = 0;  // the same, with the fused optimizer
  double compute_end = 0;      // backward's compute, as replayed
  int buckets = 0;
  std::vector<std::pair<double, double>> allreduces;  // (start, end) per bucket, from backward's start
};

// How long [begin, end] ran beside any of `spans` (which do not overlap each other).
double time_beside(double begin, double end, const std::vector<std::pair<double, double>>& spans);

// Sets each gradient's and the tail's compute work from its recorded gap: the part of a
// gap beside one of `allreduces` (start, end from backward's start, as the run had them)
// counts at `rate` (the compute's speed beside communication, 0 < rate <= 1).
void set_compute_work(IterationInputs& in, const std::vector<std::pair<double, double>>& allreduces, double rate);

// Replays `in` with buckets packed at (first_cap, cap) bytes.
Simulated simulate(const IterationInputs& in, const AllreduceCost& cost, int64_t first_cap, int64_t cap);

}  // namespace ddpscope::probes
