#include "clock_offset_estimator.h"

namespace ddpscope::probes {

void ClockOffsetEstimator::add(int64_t t0_ns, int64_t t_collector_ns, int64_t t1_ns) {
  if (t1_ns < t0_ns) return;  // not a valid exchange
  // The collector's time comes off the network: a value no clock reads must not
  // overflow the arithmetic (such a sample is dropped).
  int64_t rtt = 0, offset = 0;
  if (__builtin_sub_overflow(t1_ns, t0_ns, &rtt)) return;
  const int64_t mid = t0_ns + rtt / 2;
  if (__builtin_sub_overflow(t_collector_ns, mid, &offset)) return;
  const ClockSample s{mid, offset, rtt};
  if (!best_ || s.rtt_ns < best_->rtt_ns) best_ = s;
}

}  // namespace ddpscope::probes
