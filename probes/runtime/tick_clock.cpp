#include "tick_clock.h"

#include "probe.h"

namespace ddpscope::probes {
namespace {

struct Pair {
  int64_t ticks, ns;
};

// A tick reading and the nanosecond time at the same moment (the midpoint of two clock
// reads around it).
Pair read_pair() {
  const int64_t a = now_ns();
  const int64_t t = now_ticks();
  const int64_t b = now_ns();
  return {t, a + (b - a) / 2};
}

}  // namespace

TickClock& TickClock::instance() {
  static TickClock* clock = new TickClock;  // never destroyed: shippers may outlive statics
  return *clock;
}

TickClock::TickClock() {
  const Pair p0 = read_pair();
  ticks0_ = p0.ticks;
  ns0_ = p0.ns;
  if constexpr (!kTicksAreTsc) return;
  // A first rate over 2 ms; refresh() lengthens the baseline from then on.
  Pair p1 = read_pair();
  while (p1.ns - ns0_ < 2'000'000)
    p1 = read_pair();
  ns_per_tick_ = static_cast<double>(p1.ns - ns0_) / static_cast<double>(p1.ticks - ticks0_);
}

void TickClock::refresh() {
  if constexpr (!kTicksAreTsc) return;
  const Pair p = read_pair();
  if (p.ticks > ticks0_ && p.ns - ns0_ > 2'000'000) {
    ns_per_tick_ = static_cast<double>(p.ns - ns0_) / static_cast<double>(p.ticks - ticks0_);
  }
}

}  // namespace ddpscope::probes
