#include "run_list_model.h"

#include <QDir>
#include <QFileInfo>
#include <QFont>
#include <QImage>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>

#include "run_store_reader.h"
#include "user_message.h"

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
  // The run's name: the file's, less the .ddprun every run file has.
  e.name = QFileInfo(path).fileName();
  if (e.name.endsWith(QLatin1String(".ddprun")) && e.name.size() > 7) e.name.chop(7);
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
    e.error = userMessage(ex);
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
    m_entries.push_back(e);
  }
  const QFileInfoList files = QDir(m_folder).entryInfoList({QStringLiteral("*.ddprun")}, QDir::Files,
                                                           QDir::Time);  // newest first
  for (const QFileInfo& f : files)
    m_entries.push_back(readEntry(f.absoluteFilePath()));
  endResetModel();
}

// A folder with an arrow leaving it: the run's file lives outside the workspace. Drawn,
// not text, so the name keeps the column's width; an image, so no GUI session is needed.
static QImage outsideIcon() {
  static const QImage icon = [] {
    QImage image(16, 16, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(QColor(0x55, 0x55, 0x55), 1.2));
    QPainterPath folder;
    folder.moveTo(1.5, 4.5);
    folder.lineTo(6, 4.5);
    folder.lineTo(7.5, 6);
    folder.lineTo(11, 6);
    folder.lineTo(11, 14.5);
    folder.lineTo(1.5, 14.5);
    folder.closeSubpath();
    p.drawPath(folder);
    p.setPen(QPen(QColor(0x00, 0x72, 0xb2), 1.6));  // the arrow, out to the top right
    p.drawLine(QPointF(7, 11), QPointF(14, 2.5));
    p.drawLine(QPointF(14, 2.5), QPointF(9.5, 2.5));
    p.drawLine(QPointF(14, 2.5), QPointF(14, 7));
    return image;
  }();
  return icon;
}

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Entry& e = m_entries[index.row()];
  if (role == PathRole) return e.path;
  if (role == Qt::ToolTipRole) {
    if (!e.error.isEmpty()) return e.error;
    // The whole row: a narrow list hides its last columns (RunListPanel).
    QStringList facts;
    if (!e.status.isEmpty()) facts << e.status;
    if (e.worldSize > 0) facts << tr("%n rank(s)", nullptr, e.worldSize);
    if (!e.model.isEmpty()) facts << tr("model %1").arg(e.model);
    for (int column : {Started, Duration})
      if (const QString text = data(index.siblingAtColumn(column)).toString(); !text.isEmpty())
        facts << (column == Started ? tr("started %1").arg(text) : tr("took %1").arg(text));
    const QString where = e.outside ? tr("Outside the workspace: %1").arg(e.path) : e.path;
    return facts.isEmpty() ? where : where + QLatin1Char('\n') + facts.join(QStringLiteral(" · "));
  }
  if (role == Qt::DecorationRole && e.outside && index.column() == Name) return outsideIcon();
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
