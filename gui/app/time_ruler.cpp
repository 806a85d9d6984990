#include "time_ruler.h"

#include "ruler_ticks.h"

namespace ddpscope::gui {

void paintTimeRuler(QPainter& p, const TimeAxis& axis, int64_t origin_ns, int x0, int top, int bottom,
                    const QColor& color) {
  const QFontMetrics fm = p.fontMetrics();
  const RulerTicks ticks = rulerTicks(
      axis, origin_ns, [&](const std::string& s) { return fm.horizontalAdvance(QString::fromStdString(s)); });
  p.setPen(color);
  for (const RulerTick& t : ticks.ticks) {
    const int x = x0 + static_cast<int>(t.x);
    p.drawLine(x, top - 4, x, bottom);
    p.drawText(x + 2, top - 6, QString::fromStdString(t.label));
  }
}

}  // namespace ddpscope::gui
