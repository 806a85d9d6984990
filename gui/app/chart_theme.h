// Charts follow the application's palette: a dark window gets Qt Charts' dark theme, so
// the charts are not white panels in a dark app. Call before adding series (a theme
// change resets series colours), and set custom colours after adding them.
#pragma once

#include <QChart>
#include <QPalette>

namespace ddpscope::gui {

inline bool paletteIsDark(const QPalette& palette) { return palette.color(QPalette::Window).lightness() < 128; }

inline void applyChartTheme(QChart* chart, const QPalette& palette) {
  chart->setTheme(paletteIsDark(palette) ? QChart::ChartThemeDark : QChart::ChartThemeLight);
}

}  // namespace ddpscope::gui
