// TimeAxis: the mapping between run time (ns) and pixels of a view, kept in a plain
// struct so tests exercise zooming and panning without a window. The visible window
// [begin_ns, end_ns) fills [0, width_px).
#pragma once

#include <cstdint>

namespace ddpscope::gui {

struct TimeAxis {
  int64_t begin_ns = 0;
  int64_t end_ns = 1;
  double width_px = 1;

  double nsPerPx() const { return static_cast<double>(end_ns - begin_ns) / width_px; }
  double toPx(int64_t t_ns) const { return static_cast<double>(t_ns - begin_ns) / nsPerPx(); }
  int64_t toNs(double px) const { return begin_ns + static_cast<int64_t>(px * nsPerPx()); }
  // Zooms by `factor` (> 1: in) keeping the time under `anchor_px` where it is.
  void zoom(double factor, double anchor_px);
  // Moves the window right by `dx_px` pixels of content (negative: left).
  void pan(double dx_px);
  // Shows [begin, end), with a margin of `margin` of the width on each side.
  void fit(int64_t begin, int64_t end, double margin = 0.02);

  // Zooming stops at 100 ns across the view: the ruler labels ns, and the probes'
  // timestamps resolve tens of ns.
  static constexpr int64_t kMinSpanNs = 100;
};

}  // namespace ddpscope::gui
