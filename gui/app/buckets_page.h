// BucketsPage: one rank's gradient buckets in one iteration (when each filled, when its
// allreduce ran), the parameters of each bucket, and the bucket-size advice, with how
// many buckets there were before and after the rebuild.
#pragma once

#include <QWidget>
#include <memory>

#include "run_data.h"
#include "run_page.h"

class QComboBox;
class QLabel;
class QSpinBox;
class QTableView;

namespace ddpscope::probes {
class RunStoreReader;
}

namespace ddpscope::gui {

class BucketAdviceView;
class BucketTableModel;
class EmptyState;
class ParameterBucketModel;

class BucketsPage : public QWidget, public RunPage {
  Q_OBJECT

 public:
  explicit BucketsPage(QWidget* parent = nullptr);
  void showRun(const ShownRun& shown) override;
  void releaseRun(bool sameRun) override { clear(); }
  std::optional<QString> whyEmpty(const RunData* run) const override;
  // Shows `run`; `reader` (may be null) lets the advice read what RunData leaves out.
  // `keepChoice`: a live reload of the same run keeps the rank and iteration picked.
  void setRun(std::shared_ptr<const RunData> run, probes::RunStoreReader* reader, bool keepChoice);
  void clear();
  EmptyState* emptyState() const { return m_empty; }
  BucketTableModel* bucketModel() const { return m_buckets; }
  ParameterBucketModel* parameterModel() const { return m_params; }
  BucketAdviceView* advice() const { return m_advice; }
  QString rebuildNote() const;  // the line above the advice: how many buckets, rebuilt or not
  QTableView* bucketTable() const { return m_bucketTable; }
  QTableView* parameterTable() const { return m_paramTable; }

 private:
  void update();

  std::shared_ptr<const RunData> m_run;
  probes::RunStoreReader* m_reader = nullptr;
  BucketTableModel* m_buckets = nullptr;
  ParameterBucketModel* m_params = nullptr;
  QComboBox* m_rank = nullptr;
  QSpinBox* m_iteration = nullptr;
  QLabel* m_rebuildNote = nullptr;
  BucketAdviceView* m_advice = nullptr;
  QTableView* m_bucketTable = nullptr;
  QTableView* m_paramTable = nullptr;
  EmptyState* m_empty = nullptr;
};

}  // namespace ddpscope::gui
