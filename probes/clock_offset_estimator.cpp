#include "clock_offset_estimator.h"

namespace ddpscope::probes {

void ClockOffsetEstimator::add(int64_t t0_ns, int64_t t_collector_ns, int64_t t1_ns) {
  if (t1_ns < t0_ns) return;  // not a valid exchange
  const int64_t mid = t0_ns + (t1_ns - t0_ns) / 2;
  const ClockSample s{mid, t_collector_ns - mid, t1_ns - t0_ns};
  if (!best_ || s.rtt_ns < best_->rtt_ns) best_ = s;
}

}  // namespace ddpscope::probes
