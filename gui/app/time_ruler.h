// The time ruler the send/recv view draws along its top: ticks at round steps whose
// labels (times from `origin_ns`, the run's start, in units that follow the zoom) never
// collide (ruler_ticks), with a faint line down through the view.
#pragma once

#include <QPainter>

#include "time_axis.h"

namespace ddpscope::gui {

// x0: where the axis' pixel 0 is in the widget; top: the ruler's baseline; lines go
// down to `bottom`.
void paintTimeRuler(QPainter& p, const TimeAxis& axis, int64_t origin_ns, int x0, int top, int bottom,
                    const QColor& color);

}  // namespace ddpscope::gui
