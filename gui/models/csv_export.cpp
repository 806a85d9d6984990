#include "csv_export.h"

#include <QSaveFile>

namespace ddpscope::gui {
namespace {

QString field(const QVariant& v) {
  QString s = v.toString();
  if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) || s.contains(QLatin1Char('\n'))) {
    s.replace(QLatin1String("\""), QLatin1String("\"\""));
    s = QLatin1Char('"') + s + QLatin1Char('"');
  }
  return s;
}

}  // namespace

QString toCsv(const QAbstractItemModel& model) {
  QString out;
  const int columns = model.columnCount();
  // A header's line breaks are the table's layout (two-line headers), not its name.
  for (int c = 0; c < columns; ++c)
    out += (c ? QStringLiteral(",") : QString()) +
           field(model.headerData(c, Qt::Horizontal).toString().replace(QLatin1Char('\n'), QLatin1Char(' ')));
  out += QLatin1Char('\n');
  for (int r = 0; r < model.rowCount(); ++r) {
    for (int c = 0; c < columns; ++c)
      out += (c ? QStringLiteral(",") : QString()) + field(model.data(model.index(r, c)));
    out += QLatin1Char('\n');
  }
  return out;
}

bool writeCsv(const QAbstractItemModel& model, const QString& path, QString* error) {
  // QSaveFile: a failed write leaves any earlier file whole.
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(toCsv(model).toUtf8()) < 0 || !f.commit()) {
    *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace ddpscope::gui
