// Writes any table model as CSV (RFC 4180 quoting): what a table shows, with its
// header, for a spreadsheet or a script.
#pragma once

#include <QAbstractItemModel>
#include <QString>

namespace ddpscope::gui {

QString toCsv(const QAbstractItemModel& model);
// False with *error when the file cannot be written.
bool writeCsv(const QAbstractItemModel& model, const QString& path, QString* error);

}  // namespace ddpscope::gui
