// A table of the app's pages: sorts by a click on its header (by value, through
// SortProxy), rows selected whole, the model's own order until a header is clicked.
#pragma once

#include <QHeaderView>
#include <QTableView>

#include "sort_proxy.h"

namespace ddpscope::gui {

inline QTableView* makeSortableTable(QAbstractItemModel* model) {
  auto* table = new QTableView;
  auto* proxy = new SortProxy(table);
  proxy->setSourceModel(model);
  table->setModel(proxy);
  // Enabling sorting would otherwise sort by the first column, descending.
  table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  table->setSortingEnabled(true);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  return table;
}

}  // namespace ddpscope::gui
