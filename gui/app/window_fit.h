// The main window's size on the screen it opens on: 1280x800 where there is room, less on
// a smaller screen, its frame (the window manager's title bar and borders) included, so
// the status bar and what it says (a class's join code) are never below the screen.
#pragma once

#include <QMargins>
#include <QRect>
#include <QSize>

class QWidget;

namespace ddpscope::gui {

inline constexpr QSize kPreferredWindowSize{1280, 800};

// The client size that, with `frame` around it, fits `available` (a screen's area left
// by its panels), at most kPreferredWindowSize.
QSize fittedWindowSize(const QRect& available, const QMargins& frame);
// The frame a top-level window gets: its real one once shown, else a title bar's worth.
QMargins windowFrame(const QWidget& window);
// Resizes (and, shown, moves) `window` to fit its screen.
void fitToScreen(QWidget& window);

}  // namespace ddpscope::gui
