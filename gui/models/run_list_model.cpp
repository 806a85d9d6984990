#include "run_list_model.h"

#include <QDir>
#include <QFileInfo>
#include <QFont>
#include <algorithm>

#include "run_store_reader.h"

namespace ddpscope::gui {

RunListModel::RunListModel(QObject* parent)
    : TableModel({"Run", "Status", "Ranks", "Model", "Started", "Duration"}, parent) {}

void RunListModel::setFolder(const QString& folder) {
  m_folder = folder;
  refresh();
}

RunListModel::Entry RunListModel::readEntry(const QString& path) {
  Entry e;
  e.path = path;
  e.name = QFileInfo(path).fileName();
  try {
    probes::RunStoreReader reader(path.toStdString());
    const probes::RunRow run = reader.run();
    e.status = QString::fromStdString(run.status);
    e.model = QString::fromStdString(run.model);
    e.worldSize = run.world_size;
    e.started = QDateTime::fromString(QString::fromStdString(run.created_at), Qt::ISODate);
    e.ended = QDateTime::fromString(QString::fromStdString(run.ended_at), Qt::ISODate);
  } catch (const std::exception& ex) {
    e.status = QStringLiteral("unreadable");
    e.error = QString::fromUtf8(ex.what());
  }
  return e;
}

void RunListModel::addOutside(const QString& path) {
  const QFileInfo info(path);
  if (!info.exists() || QFileInfo(info.absolutePath()) == QFileInfo(m_folder)) return;
  m_outside.removeAll(info.absoluteFilePath());
  m_outside.prepend(info.absoluteFilePath());
  refresh();
}

void RunListModel::refresh() {
  beginResetModel();
  m_entries.clear();
  for (const QString& path : m_outside) {
    if (!QFileInfo::exists(path)) continue;  // gone since: no longer listed
    Entry e = readEntry(path);
    e.outside = true;
    e.name += tr(" (outside the workspace)");
    m_entries.push_back(e);
  }
  const QFileInfoList files = QDir(m_folder).entryInfoList({QStringLiteral("*.ddprun")}, QDir::Files,
                                                           QDir::Time);  // newest first
  for (const QFileInfo& f : files)
    m_entries.push_back(readEntry(f.absoluteFilePath()));
  endResetModel();
}

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Entry& e = m_entries[index.row()];
  if (role == PathRole) return e.path;
  if (role == Qt::ToolTipRole) return e.error.isEmpty() ? e.path : e.error;
  if (role == Qt::FontRole && e.outside && index.column() == Name) {
    QFont italic;
    italic.setItalic(true);
    return italic;
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Name: return e.name;
    case Status: return e.status;
    case WorldSize: return e.worldSize > 0 ? QVariant(e.worldSize) : QVariant();
    case Model: return e.model;
    case Started: return e.started.isValid() ? e.started.toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")) : QString();
    case Duration:
      if (!e.started.isValid() || !e.ended.isValid()) return QString();
      return QStringLiteral("%1 s").arg(e.started.secsTo(e.ended));
  }
  return {};
}

}  // namespace ddpscope::gui
