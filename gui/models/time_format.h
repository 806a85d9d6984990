// Times and durations as people read them: the unit follows the size (ns, µs, ms, s), so
// a 40 µs allreduce never reads "0.0 ms" and a 12 s run never reads "12000000 µs".
#pragma once

#include <cstdint>
#include <string>

namespace ddpscope::gui {

// "850 ns", "12.4 µs", "3.21 ms", "1.50 s": three significant digits.
std::string formatDuration(int64_t ns);
// A ruler label for time `t_ns` (from the run's start) where ticks are `tick_ns` apart:
// the unit follows the largest time `scale_ns` in view, the decimals the tick, so
// neighbouring labels always differ ("12.3002 s", "12.3004 s").
std::string formatRulerTime(double t_ns, double tick_ns, double scale_ns);

}  // namespace ddpscope::gui
