// ClockOffsetEstimator: the offset between this process's clock and the collector's,
// from ping-pong exchanges. For each ping the rank notes its send time t0 and receive
// time t1; the collector answers with its time tc. If the network delay is the same both
// ways, tc was read at (t0 + t1) / 2 on our clock, so offset = tc - (t0 + t1) / 2. The
// error is at most half the round trip, so the sample with the smallest round trip wins.
#pragma once

#include <cstdint>
#include <optional>

namespace ddpscope::probes {

struct ClockSample {
  int64_t t_local_ns = 0;  // (t0 + t1) / 2
  int64_t offset_ns = 0;
  int64_t rtt_ns = 0;
};

class ClockOffsetEstimator {
 public:
  void add(int64_t t0_ns, int64_t t_collector_ns, int64_t t1_ns);
  // The minimum-round-trip sample since the last reset, if any.
  std::optional<ClockSample> best() const { return best_; }
  void reset() { best_.reset(); }

 private:
  std::optional<ClockSample> best_;
};

}  // namespace ddpscope::probes
