#include "window_fit.h"

#include <QGuiApplication>
#include <QScreen>
#include <QWidget>
#include <algorithm>

namespace ddpscope::gui {

QSize fittedWindowSize(const QRect& available, const QMargins& frame) {
  const int w = available.width() - frame.left() - frame.right();
  const int h = available.height() - frame.top() - frame.bottom();
  return {std::clamp(w, 320, kPreferredWindowSize.width()), std::clamp(h, 240, kPreferredWindowSize.height())};
}

QMargins windowFrame(const QWidget& window) {
  if (window.isVisible()) {
    const QRect outer = window.frameGeometry(), inner = window.geometry();
    const QMargins real(inner.left() - outer.left(), inner.top() - outer.top(), outer.right() - inner.right(),
                        outer.bottom() - inner.bottom());
    if (!real.isNull()) return real;
  }
  // Before the window manager has framed it: a typical title bar and borders.
  return {2, 36, 2, 2};
}

void fitToScreen(QWidget& window) {
  const QScreen* screen = window.screen() ? window.screen() : QGuiApplication::primaryScreen();
  // The offscreen platform (tests, screenshots) has no screen to fit: its 800x600 is a
  // placeholder, and its windows get the preferred size.
  if (!screen || QGuiApplication::platformName() == QLatin1String("offscreen")) {
    window.resize(kPreferredWindowSize);
    return;
  }
  const QRect available = screen->availableGeometry();
  const QMargins frame = windowFrame(window);
  const QSize size = fittedWindowSize(available, frame);
  window.resize(size);
  if (window.isVisible() && !available.contains(window.frameGeometry())) {
    window.move(std::max(available.left(), std::min(window.x(), available.right() - size.width() - frame.right())),
                std::max(available.top(), std::min(window.y(), available.bottom() - size.height() - frame.bottom())));
  }
}

}  // namespace ddpscope::gui
