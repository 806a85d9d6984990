// RunListModel: the runs in a folder (the workspace), one row per run file, with what
// the run store says about each: status, world size, model, start and duration. A file
// that cannot be read shows its error instead of hiding.
#pragma once

#include <QDateTime>
#include <QString>
#include <QVector>

#include "table_model.h"

namespace ddpscope::gui {

class RunListModel : public TableModel {
  Q_OBJECT

 public:
  enum Columns { Name, Status, WorldSize, Model, Started, Duration, NumColumns };
  enum Roles { PathRole = Qt::UserRole + 1 };

  explicit RunListModel(QObject* parent = nullptr);
  // Lists the run files in `folder` (newest first).
  void setFolder(const QString& folder);
  void refresh();
  QString folder() const { return m_folder; }

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 protected:
  int rows() const override { return static_cast<int>(m_entries.size()); }

 private:
  struct Entry {
    QString path, name, status, model, error;
    int worldSize = 0;
    QDateTime started, ended;
  };
  static Entry readEntry(const QString& path);

  QString m_folder;
  QVector<Entry> m_entries;
};

}  // namespace ddpscope::gui
