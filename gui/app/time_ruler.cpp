#include "time_ruler.h"

#include <cmath>

namespace ddpscope::gui {

void paintTimeRuler(QPainter& p, const TimeAxis& axis, int64_t origin_ns, int x0, int top, int bottom,
                    const QColor& color) {
  const double span_ns = static_cast<double>(axis.end_ns - axis.begin_ns);
  const double raw = span_ns / std::max(1.0, axis.width_px / 110);
  const double step = std::pow(10, std::floor(std::log10(std::max(raw, 1.0))));
  const double tick = raw / step >= 5 ? 5 * step : raw / step >= 2 ? 2 * step : step;
  p.setPen(color);
  for (double t = std::ceil((axis.begin_ns - origin_ns) / tick) * tick; origin_ns + t <= axis.end_ns; t += tick) {
    const int x = x0 + static_cast<int>(axis.to_px(origin_ns + static_cast<int64_t>(t)));
    p.drawLine(x, top - 4, x, bottom);
    p.drawText(x + 2, top - 6, QStringLiteral("%1 ms").arg(t * 1e-6, 0, 'f', tick < 1e5 ? 3 : 1));
  }
}

}  // namespace ddpscope::gui
