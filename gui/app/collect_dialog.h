// CollectDialog (Run ▸ Collect from a job...): follow a job that another launcher starts
// (torchrun on each node, srun, a site's wrapper). It asks where the collector listens and
// how many ranks to wait for; once the app's collector listens it shows the lines to paste
// into the job's shell (or before its launcher's command), then each rank as it joins:
// its host, local rank, node, attempt and how it stands. Closing it keeps collecting; Stop
// (here or on the Live tab) ends the collection, and the run file is complete.
#pragma once

#include <QDialog>

#include "job_ranks.h"

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace ddpscope::gui {

class CollectDialog : public QDialog {
  Q_OBJECT

 public:
  explicit CollectDialog(QWidget* parent = nullptr);

  // "HOST" or "HOST:PORT" as chosen; the ranks to wait for (0: until stopped).
  QString listen() const;
  int expectedRanks() const;

  // The collector listens: the job's environment, as `export` lines and as one prefix.
  void showInstructions(const QStringList& exports, const QString& prefix);
  void setRanks(const std::vector<JobRankRow>& ranks);
  // As the collector counts them: a rank that failed with torchrun's restarts left has
  // not ended (its next attempt is waited for).
  void setCounts(int joined, int ended);
  // The collection ended (`message`: why, when it failed), or could not start.
  void setEnded(const QString& message);
  void showError(const QString& message);

  // Parts, for tests.
  QComboBox* hostBox() const { return m_host; }
  QSpinBox* portBox() const { return m_port; }
  QSpinBox* expectBox() const { return m_expect; }
  QPushButton* startButton() const { return m_start; }
  QPlainTextEdit* instructions() const { return m_lines; }
  QTableWidget* rankTable() const { return m_table; }
  QLabel* statusLabel() const { return m_status; }
  QString prefix() const { return m_prefix; }
  // Between Start collecting and the collection's end.
  bool isCollecting() const { return m_collecting; }

 signals:
  void startRequested(const QString& listen, int expect);
  void stopRequested();

 private:
  void connectButtons();
  void copy(const QString& text, const QString& what);

  QComboBox* m_host = nullptr;
  QSpinBox* m_port = nullptr;
  QSpinBox* m_expect = nullptr;
  QPushButton* m_start = nullptr;
  QPushButton* m_stop = nullptr;
  QPlainTextEdit* m_lines = nullptr;
  QPushButton* m_copyExports = nullptr;
  QPushButton* m_copyPrefix = nullptr;
  QTableWidget* m_table = nullptr;
  QLabel* m_status = nullptr;
  bool m_collecting = false;
  QStringList m_exports;
  QString m_prefix;
};

}  // namespace ddpscope::gui
