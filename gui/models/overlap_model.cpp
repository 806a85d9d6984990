#include "overlap_model.h"

#include <cmath>

namespace ddpscope::gui {

OverlapModel::OverlapModel(QObject* parent) : QAbstractTableModel(parent) {}

void OverlapModel::setRun(const RunData* run, int rank) {
  beginResetModel();
  m_rows.clear();
  if (run) {
    for (const auto& it : run->analysis.iterations) {
      if (rank < 0 || it.rank == rank) m_rows.push_back(it);
    }
  }
  endResetModel();
}

int OverlapModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int OverlapModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : NumColumns;
}

QVariant OverlapModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto& r = m_rows[index.row()];
  double v = 0;
  switch (index.column()) {
    case Rank:
      v = r.rank;
      break;
    case Iteration:
      v = static_cast<double>(r.iteration);
      break;
    case IterationMs:
      v = r.iteration_ms;
      break;
    case ComputeMs:
      v = r.compute_ms;
      break;
    case CommMs:
      v = r.comm_ms;
      break;
    case ExposedMs:
      v = r.exposed_comm_ms;
      break;
    case OverlapRatio:
      v = r.overlap_ratio;
      break;
  }
  if (role == ValueRole) return v;
  if (role == Qt::TextAlignmentRole) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  if (index.column() <= Iteration) return static_cast<qlonglong>(v);
  if (std::isnan(v)) return QStringLiteral("–");  // no communication
  return QString::number(v, 'f', index.column() == OverlapRatio ? 2 : 3);
}

QVariant OverlapModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[NumColumns] = {"Rank",         "Iteration", "Iteration (ms)",
                                          "Compute (ms)", "Comm (ms)", "Exposed comm (ms)",
                                          "Overlap"};
  return section >= 0 && section < NumColumns ? QString::fromLatin1(names[section]) : QVariant();
}

}  // namespace ddpscope::gui
