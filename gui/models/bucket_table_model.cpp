#include "bucket_table_model.h"

#include <QLocale>
#include <algorithm>

namespace ddpscope::gui {

BucketTableModel::BucketTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void BucketTableModel::setRun(const RunData* run, int rank, int64_t iteration) {
  beginResetModel();
  m_rows.clear();
  m_iterationBegin = 0;
  if (run) {
    for (const auto& it : run->analysis.iterations) {
      if (it.rank == rank && it.iteration == iteration) m_iterationBegin = it.t_begin_ns;
    }
    // The assignment in force: the latest generation of this rank.
    int generation = -1;
    for (const auto& b : run->buckets) {
      if (b.rank == rank) generation = std::max(generation, b.generation);
    }
    for (const auto& t : run->analysis.buckets) {
      if (t.rank != rank || t.iteration != iteration) continue;
      Row row{t, {}, 0};
      for (const auto& b : run->buckets) {
        if (b.rank != rank || b.generation != generation || b.bucket != t.bucket) continue;
        row.numParameters = static_cast<int>(b.params.size());
        QStringList names;
        for (int64_t p : b.params) {
          for (const auto& param : run->params) {
            if (param.rank == rank && param.generation == generation && param.index == p)
              names << QString::fromStdString(param.name);
          }
        }
        row.parameters = names.join(QStringLiteral(", "));
      }
      m_rows.push_back(row);
    }
    std::vector<Row*> by_ready;
    for (Row& r : m_rows) {
      if (r.timing.ready_ns >= 0) by_ready.push_back(&r);
    }
    std::stable_sort(by_ready.begin(), by_ready.end(), [](const Row* a, const Row* b) {
      return a->timing.ready_ns < b->timing.ready_ns;
    });
    for (size_t i = 0; i < by_ready.size(); ++i)
      by_ready[i]->readyOrder = static_cast<int>(i) + 1;
  }
  endResetModel();
}

int BucketTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int BucketTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : NumColumns;
}

QVariant BucketTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& r = m_rows[index.row()];
  const auto ms = [&](int64_t t) { return (t - m_iterationBegin) * 1e-6; };
  if (role == Qt::ToolTipRole && index.column() == Parameters) return r.parameters;
  if (role == Qt::TextAlignmentRole)
    return index.column() == Parameters ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Bucket:
      return r.timing.bucket;
    case ReadyOrder:
      return r.readyOrder > 0 ? QVariant(r.readyOrder) : QVariant(QStringLiteral("–"));
    case Bytes:
      return QLocale().formattedDataSize(r.timing.bytes);
    case Parameters:
      return QStringLiteral("%1: %2").arg(r.numParameters).arg(r.parameters);
    case Ready:
      return r.timing.ready_ns >= 0 ? QString::number(ms(r.timing.ready_ns), 'f', 3) : QString();
    case Start:
      return QString::number(ms(r.timing.start_ns), 'f', 3);
    case End:
      return QString::number(ms(r.timing.end_ns), 'f', 3);
    case Duration:
      return QString::number((r.timing.end_ns - r.timing.start_ns) * 1e-6, 'f', 3);
    case Wait:
      return QString::number(r.timing.wait_ms, 'f', 3);
  }
  return {};
}

QVariant BucketTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[NumColumns] = {"Bucket",         "Ready order",     "Bytes",
                                          "Ready (ms)",     "Allreduce start", "Allreduce end",
                                          "Allreduce (ms)", "Wait (ms)",       "Parameters"};
  return section >= 0 && section < NumColumns ? QString::fromLatin1(names[section]) : QVariant();
}

}  // namespace ddpscope::gui
