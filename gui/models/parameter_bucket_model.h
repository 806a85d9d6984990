// ParameterBucketModel: the parameter -> bucket map of one rank, with the bucket each
// parameter had before the rebuild (generation 0, reverse registration order) and after
// it (generation 1, the observed gradient-ready order).
#pragma once

#include <QAbstractTableModel>
#include <QVector>

#include "run_data.h"

namespace ddpscope::gui {

class ParameterBucketModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Columns { Index, Name, Shape, Bytes, BucketBefore, BucketAfter, NumColumns };

  explicit ParameterBucketModel(QObject* parent = nullptr);
  // `run` may go away after the call: the model copies what it shows.
  void setRun(const RunData* run, int rank);
  bool rebuilt() const { return m_rebuilt; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    int index = 0;
    QString name, shape, dtype;
    qint64 bytes = 0;
    int before = -1, after = -1;
  };
  QVector<Row> m_rows;
  bool m_rebuilt = false;
};

}  // namespace ddpscope::gui
