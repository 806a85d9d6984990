#include "sort_proxy.h"

#include <QStandardItem>

namespace ddpscope::gui {

QStandardItem* sortableCell(const QString& text, const QVariant& sortKey) {
  auto* item = new QStandardItem(text);
  item->setData(sortKey, kSortRole);
  item->setEditable(false);
  return item;
}

bool SortProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant a = left.data(kSortRole), b = right.data(kSortRole);
  if (a.isValid() && b.isValid()) return QVariant::compare(a, b) == QPartialOrdering::Less;
  if (a.isValid() != b.isValid()) return !a.isValid();  // cells without a value first
  const QString x = left.data().toString(), y = right.data().toString();
  bool xn = false, yn = false;
  const double dx = x.toDouble(&xn), dy = y.toDouble(&yn);
  if (xn && yn) return dx < dy;
  if (xn != yn) return xn;  // numbers before words ("–", "never")
  return QString::localeAwareCompare(x, y) < 0;
}

}  // namespace ddpscope::gui
