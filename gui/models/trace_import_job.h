// TraceImportJob: converts a PyTorch job's profiler traces (a folder, or the files) into
// a run file in the background (probes/formats/torch_trace_import.h), reporting progress to the
// UI thread and stoppable at any time: a cancelled or failed import leaves no file. The
// desktop app opens traces through it (File > Open, drag and drop, the command line).
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QStringList>
#include <atomic>
#include <memory>

namespace ddpscope::gui {

class TraceImportJob : public QObject {
  Q_OBJECT

 public:
  explicit TraceImportJob(QObject* parent = nullptr);
  ~TraceImportJob() override;  // cancels a running import and waits for it

  // Imports `inputs` into `out` (which must not exist). False, with the reason, when an
  // import already runs.
  bool start(const QStringList& inputs, const QString& out, QString* error = nullptr);
  void cancel();
  bool isRunning() const { return m_watcher.isRunning(); }
  QString output() const { return m_out; }

 signals:
  // From the import's thread, delivered queued: fraction in [0, 1] and what it reads.
  void progress(double fraction, const QString& what);
  void finished(const QString& runFile, const QStringList& notes);
  void failed(const QString& message, bool cancelled);

 private:
  struct Outcome {
    bool ok = false, cancelled = false;
    QString error;
    QStringList notes;
  };
  void onDone();

  QFutureWatcher<Outcome> m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancel;
  QString m_out;
};

// Whether `path` is something TraceImportJob takes: a folder, or a *.json / *.json.gz
// file (a run file is opened, not imported).
bool isTraceInput(const QString& path);
// The flight-recorder dumps `path` names: itself when it is one, or every file of a folder
// of dumps (nccl_trace_rank_0, ...); empty when it is neither.
QStringList flightDumpFiles(const QString& path);
// A run in `workspace` already imported from exactly these trace files and newer than
// each of them (opened instead of importing again), or "" when there is none.
QString findExistingImport(const QStringList& inputs, const QString& workspace);
// Where an import of `inputs` goes in `workspace`: the folder's (or first file's) name,
// without .json / .gz / .pt.trace, as `NAME.ddprun`, or `NAME-2.ddprun`, ... when taken.
QString importTargetFor(const QStringList& inputs, const QString& workspace);

}  // namespace ddpscope::gui
