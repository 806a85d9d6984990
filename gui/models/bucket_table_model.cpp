#include "bucket_table_model.h"

#include "collective_bandwidth.h"
#include "sort_proxy.h"
#include "time_format.h"

#include <QColor>
#include <QLocale>
#include <algorithm>
#include <map>
#include <optional>

namespace ddpscope::gui {

BucketTableModel::BucketTableModel(QObject* parent)
    // Two-line headers, the allreduce's parts before its times: at 1280x800 with the run list
    // shown every column up to the bus bandwidth is in view.
    : TableModel({"Bucket", "Ready\norder", "Bytes", "ZeRO\nupdates", "Ready (after\nbackward start)",
                  "Queue delay\n(ready → start)", "Allreduce", "Transfer (after\nthe last rank)", "Bus\nbandwidth",
                  "Allreduce\nstart", "Allreduce\nend", "Backward\nwaited", "Parameters"},
                 parent) {}

void BucketTableModel::setRun(const RunData* run, int rank, int64_t iteration) {
  beginResetModel();
  m_rows.clear();
  m_origin = 0;
  if (run) {
    for (const auto& it : run->analysis.iterations) {
      if (it.rank == rank && it.iteration == iteration) m_origin = it.t_begin_ns;
    }
    // Backward's start on that rank: where the buckets' story begins.
    for (const auto& lane : run->timeline.lanes) {
      if (lane.rank != rank) continue;
      for (const auto& s : lane.spans) {
        if (s.kind == probes::Kind::Backward && s.iteration == iteration) {
          m_origin = s.begin_ns;
          break;
        }
      }
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
        std::map<int, int> owned;  // rank -> parameters of this bucket it updates
        for (int64_t p : b.params) {
          for (const auto& param : run->params) {
            if (param.rank == rank && param.generation == generation && param.index == p)
              names << QString::fromStdString(param.name);
          }
          for (const auto& s : run->zero_shards)
            if (s.param == p) ++owned[s.owner];
        }
        row.parameters = names.join(QStringLiteral(", "));
        QStringList owners;
        for (const auto& [owner, n] : owned)
          owners << tr("rank %1: %2").arg(owner).arg(n);
        row.owners = owners.join(QStringLiteral(" · "));
      }
      m_rows.push_back(row);
    }
    std::vector<Row*> by_ready;
    for (Row& r : m_rows) {
      if (r.timing.ready_ns >= 0) by_ready.push_back(&r);
    }
    std::stable_sort(by_ready.begin(), by_ready.end(),
                     [](const Row* a, const Row* b) { return a->timing.ready_ns < b->timing.ready_ns; });
    for (size_t i = 0; i < by_ready.size(); ++i)
      by_ready[i]->readyOrder = static_cast<int>(i) + 1;
  }
  endResetModel();
}

QVariant BucketTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& r = m_rows[index.row()];
  const probes::BucketTiming& t = r.timing;
  const auto text = [](int64_t ns) { return QString::fromStdString(formatDuration(ns)); };
  const int64_t queue = t.ready_ns >= 0 ? t.start_ns - t.ready_ns : -1;
  const std::optional<probes::TransferRate> rate = probes::bucket_rate(t);
  if (role == Qt::ToolTipRole && index.column() == Parameters) return r.parameters;
  if (role == Qt::ToolTipRole && index.column() == Owners)
    return tr("ZeRO: how many of this bucket's parameters each rank updates (and keeps optimizer state for)");
  if (role == Qt::ToolTipRole && index.column() == QueueDelay)
    return tr(
        "From the bucket's last gradient to its allreduce's start. Long delays: the bucket waited for "
        "lower-numbered buckets (launched in order), or the communication thread was busy.");
  if (role == Qt::ToolTipRole && (index.column() == Transfer || index.column() == BusBandwidth))
    return tr(
        "From the last rank's arrival at this allreduce to this rank's end: waiting for a late rank is not "
        "the network's time. Bus bandwidth = bytes / transfer x 2(n-1)/n for n ranks, as nccl-tests counts "
        "it; empty where not every rank reduced the bucket.");
  if (role == Qt::BackgroundRole && index.column() == QueueDelay && queue > 0 && queue * 10 > t.end_ns - t.start_ns)
    return QColor(0xf2, 0x8e, 0x2b, 90);  // queued for more than a tenth of its allreduce
  if (role == Qt::TextAlignmentRole)
    return index.column() == Parameters || index.column() == Owners ? QVariant()
                                                                    : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == kSortRole) {
    switch (index.column()) {
      case Bucket: return t.bucket;
      case ReadyOrder: return r.readyOrder > 0 ? r.readyOrder : 1 << 30;
      case Bytes: return QVariant::fromValue<qlonglong>(t.bytes);
      case Ready: return QVariant::fromValue<qlonglong>(t.ready_ns >= 0 ? t.ready_ns - m_origin : -1);
      case QueueDelay: return QVariant::fromValue<qlonglong>(queue);
      case Start: return QVariant::fromValue<qlonglong>(t.start_ns - m_origin);
      case End: return QVariant::fromValue<qlonglong>(t.end_ns - m_origin);
      case Duration: return QVariant::fromValue<qlonglong>(t.end_ns - t.start_ns);
      case Transfer: return rate ? rate->transfer_ms : -1.0;
      case BusBandwidth: return rate ? rate->busbw_gbps : -1.0;
      case Wait: return t.wait_ms;
      case Parameters: return r.numParameters;
      case Owners: return r.owners;
    }
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Bucket: return t.bucket;
    case ReadyOrder: return r.readyOrder > 0 ? QVariant(r.readyOrder) : QVariant(QStringLiteral("–"));
    case Bytes: return QLocale().formattedDataSize(t.bytes);
    case Parameters: return QStringLiteral("%1: %2").arg(r.numParameters).arg(r.parameters);
    case Owners: return r.owners.isEmpty() ? QStringLiteral("–") : r.owners;
    case Ready: return t.ready_ns >= 0 ? text(t.ready_ns - m_origin) : QString();
    case QueueDelay: return queue >= 0 ? text(queue) : QString();
    case Start: return text(t.start_ns - m_origin);
    case End: return text(t.end_ns - m_origin);
    case Duration: return text(t.end_ns - t.start_ns);
    case Transfer: return rate ? text(static_cast<int64_t>(rate->transfer_ms * 1e6)) : QString();
    case BusBandwidth:  // a lower bound where the run holds some of the job's ranks
      return rate ? QString::fromStdString((t.every_arrival ? "" : "≥ ") + probes::rate_text(rate->busbw_gbps))
                  : QString();
    case Wait: return text(static_cast<int64_t>(t.wait_ms * 1e6));
  }
  return {};
}

}  // namespace ddpscope::gui
