#include "overlap_model.h"

#include <QColor>
#include <cmath>
#include <map>

#include "collective_bandwidth.h"

namespace ddpscope::gui {

// Two-line headers: at 1280x800 with the run list shown every column up to the bus
// bandwidth is in view.
OverlapModel::OverlapModel(QObject* parent)
    : TableModel({"Rank", "Iteration", "Iteration\n(ms)", "Compute\n(ms)", "Comm\n(ms)", "Exposed\ncomm (ms)",
                  "Of it\nwaiting (ms)", "Overlap", "Bus bandwidth\n(GB/s)", "Allreduce start\nlag (ms)", "Straggler"},
                 parent) {}

void OverlapModel::setRun(const RunData* run, int rank) {
  beginResetModel();
  m_rows.clear();
  if (run) {
    // (iteration, rank) -> first allreduce start, and per iteration the earliest one.
    std::map<std::pair<int64_t, int>, int64_t> first;
    std::map<int64_t, int64_t> earliest;
    std::map<std::pair<int64_t, int>, probes::BucketBusTotals> bus;  // (iteration, rank)
    for (const auto& b : run->analysis.buckets) {
      bus[{b.iteration, b.rank}].add(b);
      auto [f, inserted] = first.try_emplace({b.iteration, b.rank}, b.start_ns);
      if (!inserted) f->second = std::min(f->second, b.start_ns);
      auto [e, fresh] = earliest.try_emplace(b.iteration, b.start_ns);
      if (!fresh) e->second = std::min(e->second, b.start_ns);
    }
    std::map<int64_t, int> straggler;
    // One verdict for every view: the cause analysis' straggler of each iteration (slow_cause.h),
    // or the older rule where it has none (imported GPU traces without collectives).
    if (run->cause.not_analysed.empty()) {
      for (const auto& s : run->cause.by_iteration)
        if (s.rank >= 0) straggler[s.iteration] = s.rank;
    } else {
      for (const auto& s : probes::find_stragglers(run->analysis))
        straggler[s.iteration] = s.rank;
    }
    for (const auto& it : run->analysis.iterations) {
      if (rank >= 0 && it.rank != rank) continue;
      Row row{it};
      const auto f = first.find({it.iteration, it.rank});
      if (f != first.end()) row.startLagMs = (f->second - earliest[it.iteration]) / 1e6;
      if (const auto b = bus.find({it.iteration, it.rank}); b != bus.end()) row.busGbps = b->second.gbps();
      const auto s = straggler.find(it.iteration);
      row.straggler = s != straggler.end() && s->second == it.rank;
      m_rows.push_back(row);
    }
  }
  endResetModel();
}

QVariant OverlapModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto& row = m_rows[index.row()];
  const auto& r = row.it;
  if (index.column() == Straggler) {
    if (role == ValueRole) return row.straggler;
    if (role == Qt::DisplayRole) return row.straggler ? QStringLiteral("straggler") : QString();
  }
  if (role == Qt::BackgroundRole && row.straggler) return QColor(0xff, 0xe0, 0xb0);
  double v = 0;
  switch (index.column()) {
    case Rank: v = r.rank; break;
    case Iteration: v = static_cast<double>(r.iteration); break;
    case IterationMs: v = r.iteration_ms; break;
    case ComputeMs: v = r.compute_ms; break;
    case CommMs: v = r.comm_ms; break;
    case ExposedMs: v = r.exposed_comm_ms; break;
    case ExposedWaitMs: v = r.wait_known ? r.exposed_wait_ms : std::nan(""); break;
    case OverlapRatio: v = r.overlap_ratio; break;
    case BusGbps: v = row.busGbps; break;
    case StartLagMs: v = row.startLagMs; break;
    case Straggler: return {};
  }
  if (role == ValueRole) return v;
  if (role == Qt::TextAlignmentRole) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  if (index.column() <= Iteration) return static_cast<qlonglong>(v);
  if (std::isnan(v)) return QStringLiteral("–");  // no communication
  return QString::number(v, 'f', index.column() == OverlapRatio ? 2 : 3);
}

}  // namespace ddpscope::gui
