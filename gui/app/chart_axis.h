// Value-axis labels that read at a glance. Without a label format Qt Charts prints one
// decimal more than its ticks' step needs ("500000.0" samples/s, "0.50" beside "1.00");
// these print the decimals the ticks need and no more, and group the digits in thousands
// ("500,000").
#pragma once

#include <QString>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

namespace ddpscope::gui {

// The decimals that write `value` exactly, at most `most` (0 for a whole number).
inline int decimalsOf(double value, int most = 4) {
  for (int d = 0; d < most; ++d) {
    const double scaled = std::abs(value) * std::pow(10.0, d);
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return most;
}

// The label format of ticks at `first` + k * `step`. Qt Charts hands the format to
// QString::asprintf, whose ' flag groups the digits (with the C locale's commas).
inline QString readableLabelFormat(double first, double step) {
  return QStringLiteral("%'.%1f").arg(std::max(decimalsOf(first), decimalsOf(step)));
}

// Call once the axis' range and ticks are final (after applyNiceNumbers()).
inline void setReadableLabels(QValueAxis* axis) {
  const bool dynamic = axis->tickType() == QValueAxis::TicksDynamic;
  const double step = dynamic ? axis->tickInterval() : (axis->max() - axis->min()) / std::max(1, axis->tickCount() - 1);
  axis->setLabelFormat(readableLabelFormat(dynamic ? axis->tickAnchor() : axis->min(), step));
}

}  // namespace ddpscope::gui
