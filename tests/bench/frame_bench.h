// What the GUI frame-time benchmarks share: one gesture sequence (zoom in from the whole
// run in steps, pan, zoom in a little more, zoom back out), replayed on a view as real
// wheel and drag events or on a baseline's axis, and the statistics of frame times.
#pragma once

#include <QApplication>
#include <QImage>
#include <QMouseEvent>
#include <QWheelEvent>
#include <QWidget>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

namespace ddpscope::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct FrameStats {
  double median = 0, p95 = 0, max = 0;
};

inline FrameStats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 95 / 100], v.back()};
}

// (wheel steps, pan px) per frame.
inline std::vector<std::pair<int, int>> gestures(int frames) {
  std::vector<std::pair<int, int>> g;
  std::mt19937 rng(7);
  for (int i = 0; i < frames; ++i) {
    const int phase = i * 4 / frames;
    if (phase == 0) g.push_back({1, 0});
    if (phase == 1) g.push_back({0, static_cast<int>(rng() % 200) - 100});
    if (phase == 2) g.push_back({1, static_cast<int>(rng() % 40) - 20});
    if (phase == 3) g.push_back({-2, 0});
  }
  return g;
}

// What of `view` shows on screen (a view in a scroll area is taller than its viewport):
// the region a paint event asks for.
inline QRegion shown(QWidget* view) {
  const QRegion r = view->visibleRegion();
  return r.isEmpty() ? QRegion(view->rect()) : r;
}

// Sends each gesture to `view` as wheel and drag events (the wheel at `zoom_x`), then
// paints what of the view shows into `frame`; returns each paint's time. Frames are
// painted into an image: the painting itself, without the platform's flush.
inline std::vector<double> replay(QWidget* view, const std::vector<std::pair<int, int>>& g, double zoom_x,
                                  QImage& frame) {
  std::vector<double> times;
  const QRegion region = shown(view);
  for (const auto& [steps, pan] : g) {
    if (steps) {
      const QPointF at(zoom_x, 40);
      QWheelEvent wheel(at, view->mapToGlobal(at), QPoint(), QPoint(0, 120 * steps), Qt::NoButton, Qt::NoModifier,
                        Qt::NoScrollPhase, false);
      QApplication::sendEvent(view, &wheel);
    }
    if (pan) {
      const QPointF from(800, 40), to(800 + pan, 40);
      QMouseEvent press(QEvent::MouseButtonPress, from, view->mapToGlobal(from), Qt::LeftButton, Qt::LeftButton,
                        Qt::NoModifier);
      QMouseEvent move(QEvent::MouseMove, to, view->mapToGlobal(to), Qt::LeftButton, Qt::LeftButton, Qt::NoModifier);
      QMouseEvent release(QEvent::MouseButtonRelease, to, view->mapToGlobal(to), Qt::LeftButton, Qt::NoButton,
                          Qt::NoModifier);
      QApplication::sendEvent(view, &press);
      QApplication::sendEvent(view, &move);
      QApplication::sendEvent(view, &release);
    }
    const auto t = Clock::now();
    view->render(&frame, QPoint(), region);
    times.push_back(ms_since(t));
  }
  return times;
}

// The baseline's side: the same gestures applied straight to its time axis (any type
// with zoom(factor, anchor_px) and pan(dx_px)), then a paint of `region` (default: all)
// into `frame`.
template <typename Axis>
std::vector<double> replay_on_axis(QWidget& view, Axis& axis, const std::vector<std::pair<int, int>>& g, double zoom_px,
                                   QImage& frame, QRegion region = {}) {
  if (region.isEmpty()) region = QRegion(view.rect());
  std::vector<double> times;
  for (const auto& [steps, pan] : g) {
    if (steps) axis.zoom(std::pow(1.25, steps), zoom_px);
    if (pan) axis.pan(-pan);
    const auto t = Clock::now();
    view.render(&frame, QPoint(), region);
    times.push_back(ms_since(t));
  }
  return times;
}

}  // namespace ddpscope::bench
