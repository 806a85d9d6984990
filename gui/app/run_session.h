// RunSession: the run the window shows and where it comes from: a file opened (on the UI
// thread or off it), PyTorch traces or flight dumps imported into the workspace, a job
// launched or a collector started and followed live, a file another process writes
// followed as it grows. It watches the open file on disk and owns the jobs. No widgets:
// pages and the window subscribe to its signals.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>

#include "job_controller.h"
#include "run_data.h"
#include "run_page.h"

namespace ddpscope::gui {

class LiveRunLoader;
class RunFileWatch;
class RunOpenJob;
class TraceImportJob;

class RunSession : public QObject {
  Q_OBJECT

 public:
  explicit RunSession(const QString& workspace, QObject* parent = nullptr);
  ~RunSession() override;

  const std::shared_ptr<const RunData>& run() const { return m_run; }
  QString workspace() const { return m_workspace; }
  // The run as pages get it (run_page.h); `sameRun`: a reload of the run shown before.
  ShownRun shown(bool sameRun) const;
  JobController* job() const { return m_job; }
  RunFileWatch* fileWatch() const { return m_fileWatch; }
  bool isStalled() const { return m_stalled; }
  // Live reloads compute the hang analysis only while a page wants it.
  void setWantHang(bool want);

  // Opens a run file on the calling thread (the command line and scripts want it shown when
  // this returns); failed() says why not. The running job's own file follows it again;
  // another pauses following the job (which keeps running).
  bool openRun(const QString& path);
  // The same, read off the UI thread (the run list, File > Open, drag and drop); a newer
  // request replaces one still loading.
  void openRunInBackground(const QString& path);
  // A job's profiler traces into a new run in the workspace, off the UI thread
  // (importProgress), then opened; traces imported before and unchanged open again. False
  // when an import already runs.
  bool importTraces(const QStringList& inputs);
  void cancelImport();
  bool isImporting() const;
  // PyTorch's flight-recorder dumps (one per rank) into the workspace, then opened.
  bool importFlightDumps(const QStringList& dumps, const QString& named);

  // A job writing a new run file in the workspace, followed live.
  bool launchJob(const LaunchConfig& config, QString* error);
  // A collector alone for a job another launcher starts, followed like a launched job.
  bool startCollecting(const QString& listen, int expect, QString* error);
  // A file another process writes (`ddpscope-cli collect --follow`), until its status
  // leaves "running".
  bool followRunFile(const QString& path, QString* error);
  void followJob();  // back to the running job after another run was opened
  bool isFollowingJob() const { return m_following; }
  void stopJob();
  // How long a live run may go without new events before it counts as stalled.
  void setStallTimeoutMs(int ms) { m_stallMs = ms; }

  // The run on screen, even after its file was deleted: a copy, or a Chrome trace.
  bool saveRunCopy(const QString& path);
  bool exportChromeTrace(const QString& path);

 signals:
  // Another run, or a reload of this one, is about to replace the one shown.
  void runChanging(bool sameRun);
  void runChanged(bool live, bool sameRun);
  void runOpened(const QString& path);  // opened by the user (not a live reload)
  void failed(const QString& message);
  void statusMessage(const QString& text, int timeoutMs = 0);
  void openStarted(const QString& path);
  void openEnded();
  void importStarted(const QString& out);
  void importProgress(double fraction, const QString& what);
  void importEnded();
  void importReused(const QString& runFile);
  void flightDumpsImported();
  void stalled();
  void resumed();
  // The Live tab's status line; `stoppable`: a job of this window runs.
  void liveStatus(const QString& text, bool stoppable);
  void followingStarted(bool unbounded);  // a new job or file followed from its start
  void jobFinished(ddpscope::gui::JobController::State state, const QString& message);
  void collectedRanks(const ddpscope::gui::RunData& run);  // a collector's run reloaded

 private:
  bool returnToJob(const QString& path);
  void show(std::shared_ptr<const RunData> run, bool live);
  void showOpened(const QString& path, std::shared_ptr<const RunData> run);
  void onLiveLoaded(std::shared_ptr<const RunData> run);
  void onCollectedRunLoaded(const RunData& run);
  void onJobFinished(JobController::State state, const QString& message);
  void onImportFinished(const QString& runFile, const QStringList& notes);
  QString newRunFile(QString* error) const;
  void beginFollowing(const QString& path, const QString& status);

  QString m_workspace;
  std::shared_ptr<const RunData> m_run;
  JobController* m_job;
  LiveRunLoader* m_live;
  RunFileWatch* m_fileWatch;
  RunOpenJob* m_opener;
  TraceImportJob* m_import;
  bool m_stalled = false;
  int m_stallMs = 10000;
  QString m_liveRun;             // the run file of the running (or last) job
  bool m_following = false;      // the pages show m_liveRun, re-read as it grows
  bool m_followingFile = false;  // m_liveRun is written by a process this window did not start
};

}  // namespace ddpscope::gui
