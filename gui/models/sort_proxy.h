// SortProxy: what makes every table of the app sortable by a click on its header, the
// way users expect: by the number behind a cell (kSortRole) where its model gives one,
// else by the cell's text read as a number when both are numbers ("9" before "10"),
// else by text.
#pragma once

#include <QSortFilterProxyModel>

class QStandardItem;

namespace ddpscope::gui {

// Models give the value a column sorts by here (ns, bytes, counts).
inline constexpr int kSortRole = Qt::UserRole + 20;

// A read-only table cell showing `text` and sorting by `sortKey`.
QStandardItem* sortableCell(const QString& text, const QVariant& sortKey);

class SortProxy : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;

 protected:
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;
};

}  // namespace ddpscope::gui
