// MainWindow: the runs of the workspace on the left; the selected (or opened) run on the
// right: a summary, per-iteration compute/communication overlap per rank, and the
// bucket table of one iteration. Reads runs only through the run store (RunData).
#pragma once

#include <QMainWindow>
#include <memory>

#include "run_data.h"

class QChartView;
class QComboBox;
class QLabel;
class QSpinBox;
class QTabWidget;
class QTableView;

namespace ddpscope::gui {

class BucketTableModel;
class OverlapModel;
class RunListModel;
class TimelineView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(const QString& workspaceFolder, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a run file; on failure shows why and keeps the current run. Returns success.
  bool openRun(const QString& path);
  const RunData* currentRun() const { return m_run.get(); }
  QTabWidget* tabs() const { return m_tabs; }
  RunListModel* runList() const { return m_runList; }
  BucketTableModel* bucketModel() const { return m_buckets; }
  OverlapModel* overlapModel() const { return m_overlap; }
  TimelineView* timeline() const { return m_timeline; }

 signals:
  void loadFailed(const QString& message);

 private:
  void showSummary();
  void updateOverlap();
  void updateBuckets();
  void exportChromeTrace();

  std::unique_ptr<RunData> m_run;
  RunListModel* m_runList = nullptr;
  BucketTableModel* m_buckets = nullptr;
  OverlapModel* m_overlap = nullptr;
  QTabWidget* m_tabs = nullptr;
  QLabel* m_summary = nullptr;
  TimelineView* m_timeline = nullptr;
  QComboBox* m_overlapRank = nullptr;
  QChartView* m_overlapChart = nullptr;
  QComboBox* m_bucketRank = nullptr;
  QSpinBox* m_bucketIteration = nullptr;
};

}  // namespace ddpscope::gui
