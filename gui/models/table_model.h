// TableModel: a flat table whose columns are known by their titles. It answers the row
// and column counts and the horizontal header, so each model writes only data() and
// how many rows it has.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>

#include <initializer_list>

namespace ddpscope::gui {

class TableModel : public QAbstractTableModel {
 public:
  TableModel(std::initializer_list<const char*> titles, QObject* parent) : QAbstractTableModel(parent) {
    for (const char* title : titles)
      m_titles << QString::fromUtf8(title);
  }

  int rowCount(const QModelIndex& parent = {}) const final { return parent.isValid() ? 0 : rows(); }
  int columnCount(const QModelIndex& parent = {}) const final {
    return parent.isValid() ? 0 : static_cast<int>(m_titles.size());
  }
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= m_titles.size())
      return {};
    return m_titles[section];
  }

 protected:
  virtual int rows() const = 0;

 private:
  QStringList m_titles;
};

}  // namespace ddpscope::gui
