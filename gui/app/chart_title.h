// A chart's title wrapped at word boundaries to the chart's width, again each time the
// view is resized: Qt Charts cuts a long title to one line ending in "...", which hid the
// bucket advice's numbers and the Live chart's note at a laptop's width.
#pragma once

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QFontMetrics>
#include <QString>
#include <algorithm>
#include <QStringList>

namespace ddpscope::gui {

// `text` in lines no wider than `width` at `metrics`, joined with <br> (the title is rich
// text). A word wider than the line stays whole on its own line.
inline QString wrapTitle(const QString& text, const QFontMetrics& metrics, int width) {
  QStringList lines;
  QString line;
  for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
    if (!line.isEmpty() && metrics.horizontalAdvance(longer) > width) {
      lines << line.toHtmlEscaped();
      line = word;
    } else {
      line = longer;
    }
  }
  if (!line.isEmpty()) lines << line.toHtmlEscaped();
  return lines.join(QStringLiteral("<br>"));
}

namespace detail {
class TitleWrapper : public QObject {
 public:
  explicit TitleWrapper(QChartView* view) : QObject(view), m_view(view) { view->installEventFilter(this); }
  void setText(const QString& text) {
    m_text = text;
    apply();
  }
  void apply() const {
    QChart* chart = m_view->chart();
    if (!chart) return;
    const int room = static_cast<int>(m_view->width() - chart->margins().left() - chart->margins().right()) - 16;
    chart->setTitle(wrapTitle(m_text, QFontMetrics(chart->titleFont()), std::max(room, 120)));
  }
  bool eventFilter(QObject*, QEvent* event) override {
    if (event->type() == QEvent::Resize) apply();
    return false;
  }

 private:
  QChartView* m_view;
  QString m_text;
};
}  // namespace detail

// Sets the view's chart's title to `text` (plain), wrapped now and on every resize. Call
// again after the view gets a new chart.
inline void setWrappedTitle(QChartView* view, const QString& text) {
  detail::TitleWrapper* wrapper = nullptr;
  for (QObject* child : view->children()) {  // not findChild: the wrapper has no meta-object of its own
    if (auto* w = dynamic_cast<detail::TitleWrapper*>(child)) wrapper = w;
  }
  if (!wrapper) wrapper = new detail::TitleWrapper(view);
  wrapper->setText(text);
}

}  // namespace ddpscope::gui
