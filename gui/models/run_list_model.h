// RunListModel: the runs in a folder (the workspace), one row per run file, with what
// the run store says about each: status, world size, model, start and duration. A file
// that cannot be read shows its error instead of hiding. Runs opened from elsewhere
// (addOutside) are listed first, marked "(outside the workspace)", so the run shown is
// always in the list.
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
  // Lists `path` too when it is not in the folder (kept across refreshes while it exists).
  void addOutside(const QString& path);
  bool isOutside(int row) const { return row >= 0 && row < rows() && m_entries[row].outside; }

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 protected:
  int rows() const override { return static_cast<int>(m_entries.size()); }

 private:
  struct Entry {
    QString path, name, status, model, error;
    int worldSize = 0;
    QDateTime started, ended;
    bool outside = false;
  };
  static Entry readEntry(const QString& path);

  QString m_folder;
  QVector<Entry> m_entries;
  QStringList m_outside;  // absolute paths, most recent first
};

}  // namespace ddpscope::gui
