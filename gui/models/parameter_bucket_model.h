// ParameterBucketModel: the parameter -> bucket map of one rank, with the bucket each
// parameter had before the rebuild (generation 0, reverse registration order) and after
// it (generation 1, the observed gradient-ready order), and under ZeRO the rank that owns
// it (steps it and keeps its optimizer state), coloured by that rank.
#pragma once

#include <QColor>
#include <QVector>

#include "table_model.h"
#include "run_data.h"

namespace ddpscope::gui {

class ParameterBucketModel : public TableModel {
  Q_OBJECT

 public:
  enum Columns { Index, Name, Shape, Bytes, BucketBefore, BucketAfter, Owner, NumColumns };

  explicit ParameterBucketModel(QObject* parent = nullptr);
  // `run` may go away after the call: the model copies what it shows.
  void setRun(const RunData* run, int rank);
  bool rebuilt() const { return m_rebuilt; }
  // Whether the run used ZeRO (the Owner column has something to show).
  bool sharded() const { return m_sharded; }
  // A ZeRO owner's rank is marked by a swatch of its rank colour (category_palette.h)
  // beside the parameter's name and the owner: the colour every chart gives that rank.
  // Not a row tint: light tints of distinct hues fold together in colour-blind vision.

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 protected:
  int rows() const override { return static_cast<int>(m_rows.size()); }

 private:
  struct Row {
    int index = 0;
    QString name, shape, dtype;
    qint64 bytes = 0;
    int before = -1, after = -1;
    int owner = -1;
  };
  QVector<Row> m_rows;
  bool m_rebuilt = false;
  bool m_sharded = false;
};

}  // namespace ddpscope::gui
