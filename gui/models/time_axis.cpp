#include "time_axis.h"

#include <algorithm>
#include <cmath>

namespace ddpscope::gui {

void TimeAxis::zoom(double factor, double anchor_px) {
  if (factor <= 0) return;
  const int64_t anchor = toNs(anchor_px);
  const double span =
      std::max<double>(static_cast<double>(end_ns - begin_ns) / factor, static_cast<double>(kMinSpanNs));
  const double left = anchor_px / width_px;  // the anchor keeps its place in the view
  begin_ns = anchor - static_cast<int64_t>(std::llround(span * left));
  end_ns = begin_ns + static_cast<int64_t>(std::llround(span));
}

void TimeAxis::pan(double dx_px) {
  const auto shift = static_cast<int64_t>(std::llround(dx_px * nsPerPx()));
  begin_ns += shift;
  end_ns += shift;
}

void TimeAxis::fit(int64_t begin, int64_t end, double margin) {
  const int64_t span = std::max<int64_t>(end - begin, kMinSpanNs);
  const auto pad = static_cast<int64_t>(static_cast<double>(span) * margin);
  begin_ns = begin - pad;
  end_ns = begin + span + pad;
}

}  // namespace ddpscope::gui
