// BucketTableModel: one iteration of one rank, one row per bucket: bytes, parameters,
// when its last gradient arrived, how long it then queued before its allreduce started
// (a bucket ready early waits for lower-numbered ones), its allreduce's length, the part of
// it after the last rank arrived (its transfer) and the bus bandwidth that gives, its start
// and end, and how long the end of backward waited for it; under ZeRO, how many of its parameters
// each rank updates (with --zero-overlap, in this bucket's hook). Times are from the start of that
// iteration's backward, in units that follow their size; kSortRole gives them in ns.
#pragma once

#include <QVector>

#include "table_model.h"
#include "run_data.h"

namespace ddpscope::gui {

class BucketTableModel : public TableModel {
  Q_OBJECT

 public:
  // ReadyOrder: 1 for the bucket whose gradients all arrived first. Index order and
  // ready order agree after a good rebuild; where they differ, a bucket ready early waits
  // for an earlier index to launch.
  enum Columns {
    Bucket,
    ReadyOrder,
    Bytes,
    Owners,
    Ready,
    QueueDelay,
    Duration,
    Transfer,      // from the last rank's arrival to this rank's end
    BusBandwidth,  // collective_bandwidth.h
    Start,
    End,
    Wait,
    Parameters,
    NumColumns
  };

  explicit BucketTableModel(QObject* parent = nullptr);
  // `run` must outlive the model or the next setRun.
  void setRun(const RunData* run, int rank, int64_t iteration);

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 protected:
  int rows() const override { return static_cast<int>(m_rows.size()); }

 private:
  struct Row {
    probes::BucketTiming timing;
    QString parameters;
    QString owners;  // "rank 0: 3 · rank 1: 5"; empty without ZeRO
    int numParameters = 0;
    int readyOrder = 0;  // 0: never ready
  };
  QVector<Row> m_rows;
  int64_t m_origin = 0;  // the start of backward (of the iteration when it has none)
};

}  // namespace ddpscope::gui
