#include "parameter_bucket_model.h"

#include <QLocale>
#include <map>

#include "category_palette.h"

namespace ddpscope::gui {

ParameterBucketModel::ParameterBucketModel(QObject* parent)
    : TableModel(
          {"Index", "Parameter", "Shape", "Bytes", "Bucket before rebuild", "Bucket after rebuild", "ZeRO owner"},
          parent) {}

void ParameterBucketModel::setRun(const RunData* run, int rank) {
  beginResetModel();
  m_rows.clear();
  m_rebuilt = false;
  m_sharded = run && !run->zero_shards.empty();
  if (run) {
    std::map<int, Row> rows;
    for (const auto& p : run->params) {
      if (p.rank != rank) continue;
      Row& r = rows[p.index];
      r.index = p.index;
      r.name = QString::fromStdString(p.name);
      r.shape = QString::fromStdString(p.shape);
      r.dtype = QString::fromStdString(p.dtype);
      const qint64 element = p.dtype == "f64" || p.dtype == "i64" ? 8 : p.dtype == "f16" || p.dtype == "bf16" ? 2 : 4;
      r.bytes = p.numel * element;
      (p.generation == 0 ? r.before : r.after) = static_cast<int>(p.bucket);
      if (p.generation > 0) m_rebuilt = true;
    }
    for (const auto& s : run->zero_shards) {
      if (auto it = rows.find(s.param); it != rows.end() && it->second.name.toStdString() == s.name)
        it->second.owner = s.owner;
    }
    for (auto& [index, row] : rows)
      m_rows.push_back(row);
  }
  endResetModel();
}

QVariant ParameterBucketModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& r = m_rows[index.row()];
  if (role == Qt::TextAlignmentRole) {
    return index.column() == Name || index.column() == Shape ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role == Qt::DecorationRole && r.owner >= 0 && (index.column() == Name || index.column() == Owner))
    return rankColor(r.owner);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Index: return r.index;
    case Name: return r.name;
    case Shape: return r.dtype + r.shape;  // f32[128,32]
    case Bytes: return QLocale().formattedDataSize(r.bytes);
    case BucketBefore: return r.before >= 0 ? QVariant(r.before) : QVariant(QStringLiteral("–"));
    case BucketAfter: return r.after >= 0 ? QVariant(r.after) : QVariant(QStringLiteral("–"));
    case Owner: return r.owner >= 0 ? QVariant(QStringLiteral("rank %1").arg(r.owner)) : QVariant(QStringLiteral("–"));
  }
  return {};
}

}  // namespace ddpscope::gui
