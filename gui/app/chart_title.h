// A chart's title wrapped at word boundaries to the chart's width, again each time the
// view is resized: Qt Charts cuts a long title to one line ending in "...", which hid the
// bucket advice's numbers and the Live chart's note at a laptop's width.
#pragma once

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QGraphicsLayout>
#include <QTextDocumentFragment>
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
// What a chart keeps free left and right of its title: its margins and its layout's.
inline qreal sideMargins(const QChart* chart) {
  qreal left = 0, top = 0, right = 0, bottom = 0;
  if (chart->layout()) chart->layout()->getContentsMargins(&left, &top, &right, &bottom);
  return chart->margins().left() + chart->margins().right() + left + right;
}

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
    // The title's room: the chart's width inside its margins and its layout's. Measured
    // from the view (the chart follows the view's size only after this resize), less its
    // frame; a line wider than the room is cut to "..." by Qt Charts.
    const int room = static_cast<int>(m_view->width() - 2 * m_view->frameWidth() - sideMargins(chart)) - 4;
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

// The width a title line has in `chart` as laid out now.
inline int titleRoom(const QChart* chart) { return static_cast<int>(chart->size().width() - sideMargins(chart)); }
}  // namespace detail

// Whether every line of the chart's title fits it whole, as laid out now (for tests).
inline bool titleFits(const QChart* chart) {
  const QFontMetrics metrics(chart->titleFont());
  for (const QString& line : chart->title().split(QStringLiteral("<br>")))
    if (metrics.horizontalAdvance(QTextDocumentFragment::fromHtml(line).toPlainText()) > detail::titleRoom(chart))
      return false;
  return true;
}

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
