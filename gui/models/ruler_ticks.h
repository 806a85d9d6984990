// RulerTicks: where the timeline's ruler puts its ticks and what they say. The step is
// the smallest 1-2-5 step whose labels, measured with the view's font, leave a gap
// between neighbours: labels never collide at any zoom.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "time_axis.h"

namespace ddpscope::gui {

struct RulerTick {
  int64_t t_ns = 0;  // absolute run time
  double x = 0;      // pixels from the axis' left edge
  std::string label;
};

struct RulerTicks {
  double step_ns = 0;
  std::vector<RulerTick> ticks;
};

// Labels are times since `origin_ns` (the run's start). `text_width` measures a label
// in pixels; `gap_px` is the least space between two labels.
RulerTicks rulerTicks(const TimeAxis& axis, int64_t origin_ns,
                      const std::function<double(const std::string&)>& text_width, double gap_px = 12);

}  // namespace ddpscope::gui
