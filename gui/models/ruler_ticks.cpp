#include "ruler_ticks.h"

#include <algorithm>
#include <cmath>

#include "time_format.h"

namespace ddpscope::gui {

RulerTicks rulerTicks(const TimeAxis& axis, int64_t origin_ns,
                      const std::function<double(const std::string&)>& text_width, double gap_px) {
  RulerTicks out;
  const double ns_per_px = axis.nsPerPx();
  if (!(ns_per_px > 0)) return out;
  const double scale =
      static_cast<double>(std::max(std::abs(axis.begin_ns - origin_ns), std::abs(axis.end_ns - origin_ns)));
  // Candidate steps from one whose ticks are at least 40 px apart, growing 1-2-5.
  double step = std::pow(10, std::floor(std::log10(std::max(1.0, 40 * ns_per_px))));
  const double mult[3] = {1, 2, 5};
  int m = 0;
  while (step * mult[m] < 40 * ns_per_px) {
    if (++m == 3) m = 0, step *= 10;
  }
  for (int attempt = 0; attempt < 40; ++attempt) {
    const double tick = step * mult[m];
    out.step_ns = tick;
    out.ticks.clear();
    double widest = 0;
    const double first = std::ceil((axis.begin_ns - origin_ns) / tick) * tick;
    for (double t = first; origin_ns + t <= axis.end_ns && out.ticks.size() < 2000; t += tick) {
      RulerTick k;
      k.t_ns = origin_ns + static_cast<int64_t>(std::llround(t));
      k.x = axis.toPx(k.t_ns);
      k.label = formatRulerTime(t, tick, scale);
      widest = std::max(widest, text_width(k.label));
      out.ticks.push_back(std::move(k));
    }
    if (tick / ns_per_px >= widest + gap_px) break;
    if (++m == 3) m = 0, step *= 10;
  }
  return out;
}

}  // namespace ddpscope::gui
