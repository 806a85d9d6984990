// OverlapModel: per rank and iteration, the times of the overlap analysis (docs/run-files.md, Definitions):
// iteration, compute, communication, exposed communication and the overlap ratio.
#pragma once

#include <QVector>
#include <limits>

#include "table_model.h"
#include "run_data.h"

namespace ddpscope::gui {

class OverlapModel : public TableModel {
  Q_OBJECT

 public:
  enum Columns {
    Rank,
    Iteration,
    IterationMs,
    ComputeMs,
    CommMs,
    ExposedMs,
    ExposedWaitMs,  // of the exposed, waiting for other ranks to arrive (empty where not known)
    OverlapRatio,
    BusGbps,     // its bucket allreduces' bus bandwidth (collective_bandwidth.h; empty where not known)
    StartLagMs,  // this rank's first allreduce start after the earliest rank's
    Straggler,   // "straggler" on the rank that started its allreduces last
    NumColumns
  };
  enum Roles { ValueRole = Qt::UserRole + 1 };  // the number behind a cell

  explicit OverlapModel(QObject* parent = nullptr);
  // rank -1: every rank. `run` must outlive the model or the next setRun.
  void setRun(const RunData* run, int rank = -1);

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 protected:
  int rows() const override { return static_cast<int>(m_rows.size()); }

 private:
  struct Row {
    probes::IterationAnalysis it;
    double startLagMs = std::numeric_limits<double>::quiet_NaN();
    double busGbps = std::numeric_limits<double>::quiet_NaN();
    bool straggler = false;
  };
  QVector<Row> m_rows;
};

}  // namespace ddpscope::gui
