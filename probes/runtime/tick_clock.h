// TickClock: converts the CPU's time-stamp counter, which spans and instants read (11 ns
// here, against 25 ns for clock_gettime), into CLOCK_MONOTONIC nanoseconds when events
// are shipped. The TSC runs at a constant rate on the CPUs we run on (constant_tsc,
// nonstop_tsc), so ns = ns0 + (ticks - ticks0) * ns_per_tick, where (ticks0, ns0) is a
// pair read at start and ns_per_tick comes from the longest baseline so far: its error
// shrinks as the run goes on, so a converted time is off by about one clock read.
//
// Thread-safety: refresh() and to_ns() from the shipper only; instance() anywhere.
#pragma once

#include <cstdint>

namespace ddpscope::probes {

class TickClock {
 public:
  static TickClock& instance();
  // Re-measures the rate over the whole baseline (cheap: one pair of clock reads).
  void refresh();
  int64_t to_ns(int64_t ticks) const {
    return ns0_ + static_cast<int64_t>(static_cast<double>(ticks - ticks0_) * ns_per_tick_);
  }
  double ns_per_tick() const { return ns_per_tick_; }

 private:
  TickClock();
  int64_t ticks0_ = 0, ns0_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace ddpscope::probes
