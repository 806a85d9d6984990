// What a user sees cut or squeezed on a page, read from the real widgets: a content pane
// (a table, a chart, a drawn view) narrower than 200 px or lower than 80 px, a label,
// button or check box whose text does not fit where the window has the room, a table
// header cut while all its columns fit, a chart title wider than its chart, axis numbers
// with decimals none needs or thousands not grouped. Each problem is one line naming the
// widget, so a failing test says what to fix.
#pragma once

#include <QAbstractButton>
#include <QAbstractScrollArea>
#include <QChart>
#include <QChartView>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QHeaderView>
#include <QLabel>
#include <QRegularExpression>
#include <QStringList>
#include <QTableView>
#include <algorithm>
#include <cmath>
#include <map>

#include "chart_title.h"

namespace ddpscope::gui::testing {

inline QString describe(const QWidget* w) {
  QString name = w->objectName();
  if (name.isEmpty()) {
    if (auto* label = qobject_cast<const QLabel*>(w)) name = '"' + label->text().left(40) + '"';
    if (auto* button = qobject_cast<const QAbstractButton*>(w)) name = '"' + button->text().left(40) + '"';
  }
  return QStringLiteral("%1 %2 (%3x%4)")
      .arg(QString::fromLatin1(w->metaObject()->className()), name)
      .arg(w->width())
      .arg(w->height());
}

// A pane the user reads or draws in. Scroll bars, combo box pop-ups and the like are
// scroll areas too but are not panes.
inline bool is_content_pane(const QWidget* w) {
  if (qobject_cast<const QChartView*>(w)) return true;
  auto* area = qobject_cast<const QAbstractScrollArea*>(w);
  if (!area || qobject_cast<const QHeaderView*>(w) || area->inherits("QComboBoxListView")) return false;
  // A one-line text box is a field, not a pane.
  if (area->inherits("QTextEdit") || area->inherits("QPlainTextEdit")) return area->height() > 40;
  return true;
}

inline void check_header(const QHeaderView* header, const QTableView* table, QStringList& problems) {
  if (header->orientation() != Qt::Horizontal || !header->isVisible()) return;
  // Only where the table has the room: all its columns shown side by side.
  if (header->length() > table->viewport()->width() + 1) return;
  const QFontMetrics fm(header->font());
  for (int section = 0; section < header->count(); ++section) {
    if (header->isSectionHidden(section)) continue;
    const QString text = table->model()->headerData(section, Qt::Horizontal).toString();
    if (text.isEmpty()) continue;
    int need = 0;  // the widest of its lines (a header may be set on two)
    for (const QString& line : text.split(QLatin1Char('\n')))
      need = std::max(need, fm.horizontalAdvance(line) + 8);
    if (header->sectionSize(section) < need)
      problems << QStringLiteral("header \"%1\" of %2 cut: %3 px for %4")
                      .arg(text, describe(table))
                      .arg(header->sectionSize(section))
                      .arg(need);
  }
}

// The numbers a chart's axes show, one list per axis (an axis' labels share a parent
// item), as drawn now.
inline QList<QStringList> axis_labels(const QChartView* view) {
  static const QRegularExpression number(QStringLiteral("^-?[0-9][0-9,]*(\\.[0-9]+)?$"));
  std::map<const QGraphicsItem*, QStringList> byAxis;
  for (const QGraphicsItem* item : view->scene()->items()) {
    const auto* text = dynamic_cast<const QGraphicsTextItem*>(item);
    if (!text || !text->isVisible()) continue;
    const QString label = text->toPlainText().trimmed();
    if (number.match(label).hasMatch()) byAxis[item->parentItem()] << label;
  }
  QList<QStringList> axes;
  for (const auto& [parent, labels] : byAxis)
    axes << labels;
  return axes;
}

// Axis labels that do not read at a glance (issue 68): decimals that no label of the axis
// needs ("500000.0", "0.50" beside "1.00"), or five digits and more not grouped in
// thousands ("500000" for "500,000").
inline QStringList axis_label_problems(const QChartView* view) {
  QStringList problems;
  for (const QStringList& labels : axis_labels(view)) {
    int shown = 0, needed = 0;
    for (const QString& label : labels) {
      const int point = label.indexOf(QLatin1Char('.'));
      QString decimals = point < 0 ? QString() : label.mid(point + 1);
      shown = std::max(shown, static_cast<int>(decimals.size()));
      while (decimals.endsWith(QLatin1Char('0')))
        decimals.chop(1);
      needed = std::max(needed, static_cast<int>(decimals.size()));
      if (std::abs(QString(label).remove(QLatin1Char(',')).toDouble()) >= 10000 && !label.contains(QLatin1Char(',')))
        problems << QStringLiteral("\"%1\" of %2: its thousands not grouped").arg(label, view->chart()->title());
    }
    if (shown > needed)
      problems << QStringLiteral("axis \"%1\" of %2: %3 decimals where %4 do")
                      .arg(labels.join(QStringLiteral(" ")), view->chart()->title())
                      .arg(shown)
                      .arg(needed);
  }
  return problems;
}

inline QStringList layout_problems(QWidget* page) {
  QStringList problems;
  const QList<QWidget*> widgets = page->findChildren<QWidget*>();
  for (QWidget* w : widgets) {
    if (!w->isVisible() || w->window() != page->window()) continue;
    if (is_content_pane(w) && (w->width() < 200 || w->height() < 80))
      problems << QStringLiteral("pane too small: ") + describe(w);
    if (auto* label = qobject_cast<QLabel*>(w)) {
      if (!label->wordWrap() && !label->text().isEmpty() && label->pixmap().isNull() &&
          label->sizeHint().width() > label->width() + 1)
        problems << QStringLiteral("label cut: ") + describe(w) +
                        QStringLiteral(" needs %1").arg(label->sizeHint().width());
    }
    if (auto* button = qobject_cast<QAbstractButton*>(w)) {
      if (!button->text().isEmpty() && button->sizeHint().width() > button->width() + 1)
        problems << QStringLiteral("button cut: ") + describe(w) +
                        QStringLiteral(" needs %1").arg(button->sizeHint().width());
    }
    if (auto* table = qobject_cast<QTableView*>(w); table && table->model())
      check_header(table->horizontalHeader(), table, problems);
    if (auto* chartView = qobject_cast<QChartView*>(w); chartView && chartView->chart()) {
      problems << axis_label_problems(chartView);
      QChart* chart = chartView->chart();
      const QString title = chart->title();
      if (!title.isEmpty()) {
        const QFontMetrics fm(chart->titleFont());
        // Qt Charts elides a title longer than the chart's width less its margins and its
        // layout's.
        const qreal room = detail::titleRoom(chart);
        QString plain = title;
        plain.replace(QStringLiteral("<br>"), QStringLiteral("\n"))
            .remove(QRegularExpression(QStringLiteral("<[^>]*>")));
        for (const QString& line : plain.split('\n')) {
          if (fm.horizontalAdvance(line) > room)
            problems << QStringLiteral("chart title cut: \"%1\" (%2 px, room %3)")
                            .arg(line.left(50))
                            .arg(fm.horizontalAdvance(line))
                            .arg(room);
        }
      }
    }
  }
  return problems;
}

}  // namespace ddpscope::gui::testing
