// MainWindow: the runs of the workspace on the left; the selected, opened or running
// run on the right: a summary, the live monitor, the timeline, compute/communication
// overlap per rank, the buckets, the autograd graph (local, or a distributed pass), the
// RPC messages, where each rank stands (the hang view), and the Learn tab that replays a
// distributed backward step by step. Launches jobs (Run > Launch) and follows them live.
// Reads runs only through the run store (RunData).
#pragma once

#include <QMainWindow>
#include <memory>
#include <set>

#include "job_controller.h"
#include "run_data.h"
#include "run_page.h"

class QChartView;
class QDialog;
class QMenu;
class QHBoxLayout;
class QCheckBox;
class QComboBox;
class QAction;
class QLabel;
class QSpinBox;
class QSplitter;
class QTabWidget;
class QTableView;
class QProgressBar;
class QProgressDialog;
class QDragEnterEvent;
class QDropEvent;

namespace ddpscope::gui {

class BucketTableModel;
class BucketsPage;
class GraphPage;
class OverlapPage;
class SummaryPage;
class GraphView;
class HangView;
class LearnPage;
class LiveMonitor;
class MessagesPage;
class LinksPage;
class LiveRunLoader;
class OverlapModel;
class ParameterBucketModel;
class RunListModel;
class TimelineView;
class TimelinePage;
class SortProxy;
class EmptyState;
class BucketAdviceView;
class TimeBreakdownPage;
class ComparePage;
class RanksPage;
class RunFileWatch;
class RunOpenJob;
class CollectDialog;
class TraceImportJob;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(const QString& workspaceFolder, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a run file; on failure shows why and keeps the current run. Returns success.
  // Another run than the running job's pauses following the job (it keeps running);
  // the job's own run file follows it live again.
  // Reads the file on the UI thread: for the command line and scripts, which want the
  // run shown when it returns.
  bool openRun(const QString& path);
  // The same, read off the UI thread with a busy indicator in the status bar; the run is
  // shown (runShown) or the failure said (loadFailed) when the load ends. A newer request
  // replaces one still loading. The run list, File > Open and drag and drop come here.
  void openRunInBackground(const QString& path);
  // A run file opens; a folder or *.json / *.json.gz file of PyTorch profiler traces is
  // imported into the workspace first (importTraces). The command line, File > Open and
  // drag and drop come here.
  // `background`: a run file opens through openRunInBackground.
  bool openPath(const QString& path, bool background = false);
  // Converts a PyTorch job's traces into a new run in the workspace, off the UI thread
  // with a progress dialog that can cancel it, then opens it. False when an import
  // already runs (said in the status bar).
  bool importTraces(const QStringList& inputs);
  // PyTorch's flight-recorder dumps (one per rank): imported into the workspace (quick:
  // a dump holds a few thousand records), then opened on the Hang tab.
  bool importFlightDumps(const QStringList& dumps, const QString& named);
  // Starts a job writing a new run file in the workspace and follows it live.
  bool launchJob(const LaunchConfig& config, QString* error);
  void followJob();  // back to the running job after another run was opened
  bool isFollowingJob() const { return m_following; }
  void stopJob();
  void showLaunchDialog();
  // Run > Collect from a job...: a collector alone for a job another launcher starts,
  // followed live like a launched job (main_window_jobs.cpp).
  void showCollectDialog();
  bool startCollecting(const QString& listen, int expect, QString* error);
  // Follows a run file another process writes (`ddpscope-cli collect --follow`) until its
  // status leaves "running"; false with *error when it cannot.
  bool followRunFile(const QString& path, QString* error);
  CollectDialog* collectDialog() const { return m_collectDialog; }
  // How long a live run may go without new events before the hang view opens.
  void setStallTimeoutMs(int ms) { m_stallMs = ms; }
  // Saves the current tab as a PNG / its table as CSV; false with the reason shown.
  bool exportViewPng(const QString& path);
  bool exportTableCsv(const QString& path);
  // File > Save a copy of the run: the run on screen, even after its file was deleted
  // from disk; false with the reason shown.
  bool saveRunCopy(const QString& path);
  // The open run (A) beside the run at `path` (B) on the Compare tab, which it shows;
  // false with the reason in the error banner (no run open, B unreadable, a side with no
  // finished iteration).
  bool compareWith(const QString& path);

  const RunData* currentRun() const { return m_run.get(); }
  // Tabs by id, case aside: summary, live, timeline, breakdown, ranks, overlap, buckets, graph,
  // messages, hang, links, compare, learn (the English titles, so --tab Hang works in any language).
  void showTab(const QString& id);
  int tabIndex(const QString& id) const;  // -1: no such tab
  bool tabIsEmpty(const QString& id) const;
  // View > Run list (Ctrl+B): the list of runs beside the tabs, shown or hidden (the
  // choice is remembered); an empty list stays hidden unless asked for.
  void setRunListShown(bool shown);
  bool runListShown() const;

  // Learn > lesson `index` (0-based): shows the Learn tab with its recorded run.
  bool openLesson(int index);
  // A lesson file (*.ddplesson) on the Learn tab; false with the reason in the banner.
  bool openLessonFile(const QString& path);
  // A ddpscope:learn?... link: the lesson, step and view it names; false with *error.
  bool openLink(const QString& link, QString* error);

  // The window's parts, for scripts and tests, which talk to the pages and their own
  // objects: the one child of type Part (named `name` where several are: "tabs", "runs",
  // "errorBanner", "reloadRun", "mainSplitter", "runListAction", "stopAction",
  // "followAction", "shortcutsAction"); null when there is none or more than one.
  template <class Part>
  Part* part(const char* name = nullptr) const {
    const auto found = findChildren<Part*>(name ? QString::fromLatin1(name) : QString());
    if (found.size() == 1) return found.front();
    qWarning("MainWindow::part: %d parts of type %s named \"%s\"", static_cast<int>(found.size()),
             Part::staticMetaObject.className(), name ? name : "");
    return nullptr;
  }

 signals:
  void loadFailed(const QString& message);
  void runShown();                            // a run (opened, or a live reload) is on screen
  void importReused(const QString& runFile);  // traces imported before were opened again

 private:
  void buildViews();
  // A tab; `shows`: the page in it that shows the open run (run_page.h), told of each run.
  void addPage(QWidget* page, const char* id, const QString& title, RunPage* shows = nullptr);
  RunPage* runPageAt(int index) const;  // null: the tab at `index` shows no run
  void buildMenus();
  QTableView* buildRunList(QWidget* parent);
  void buildPages();
  void buildDetailPages();
  QHBoxLayout* buildErrorBanner(QWidget* right);
  void buildFileMenu();
  void buildRunMenu();
  void buildViewMenu();
  void buildLearnMenu();
  void buildHelpMenu();
  // The Timeline tab at rank 0's iteration `iteration` (a click on an Overlap bar), or at
  // `rank`'s, that rank expanded (a click on the Ranks heat map).
  void showIterationInTimeline(int64_t iteration);
  void showRankIterationInTimeline(int rank, int64_t iteration);
  void showRangeInTimeline(int rank, int64_t begin, int64_t end, const QString& said);
  void showEmptyStates();  // why each tab has nothing to show (no run, no DDP iterations, ...)
  void showRun(std::shared_ptr<const RunData> run, bool live);
  void selectInRunList(const QString& path);
  void updateJobActions();
  void updateRunListVisibility();
  void refreshTab(RunPage* page);
  void refreshCurrentTab();
  void exportChromeTrace();
  void onJobFinished(JobController::State state, const QString& message);
  QString newRunFile(QString* error) const;  // a new run file's path in the workspace
  void beginFollowing(const QString& path, const QString& status);
  void onCollectedRunLoaded(const RunData& run);
  void onRunFileChanged();
  void showBanner(const QString& message, bool reload, bool saveCopy);
  void setUpTraceImport();
  void setUpRunOpener();
  // The run file of the running job: follow it again (true), nothing to read.
  bool returnToJob(const QString& path);
  void showOpenedRun(const QString& path, std::shared_ptr<const RunData> run);
  void onImportFinished(const QString& runFile, const QStringList& notes);
  void onImportFailed(const QString& message, bool cancelled);

 protected:
  void showEvent(QShowEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  std::shared_ptr<const RunData> m_run;
  RunListModel* m_runList = nullptr;
  JobController* m_job = nullptr;
  LiveRunLoader* m_live = nullptr;
  QTabWidget* m_tabs = nullptr;
  SummaryPage* m_summary = nullptr;
  OverlapPage* m_overlapPage = nullptr;
  BucketsPage* m_bucketPage = nullptr;
  GraphPage* m_graphPage = nullptr;
  LiveMonitor* m_monitor = nullptr;
  TimelineView* m_timeline = nullptr;
  TimelinePage* m_timelineTab = nullptr;
  TimeBreakdownPage* m_breakdown = nullptr;
  QTableView* m_runsView = nullptr;
  QSplitter* m_mainSplitter = nullptr;
  QAction* m_runListAction = nullptr;
  bool m_rereadingRunList = false;
  bool m_runListAskedFor = false;  // View > Run list ticked this session: shown even empty
  QLabel* m_errorBanner = nullptr;
  QWidget* m_closeError = nullptr;
  QWidget* m_reloadRun = nullptr;       // in the banner, when the run file was replaced
  QWidget* m_saveCopyButton = nullptr;  // in the banner, when it was deleted or replaced
  RunFileWatch* m_fileWatch = nullptr;
  QAction* m_followAction = nullptr;
  QAction* m_stopAction = nullptr;
  SortProxy* m_runsProxy = nullptr;
  QAction* m_shortcutsAction = nullptr;
  QSize m_fittedSize;  // the size fitToScreen chose, until the window is first shown
  EmptyState* m_messagesEmpty = nullptr;
  EmptyState* m_hangEmpty = nullptr;
  ComparePage* m_compare = nullptr;
  RanksPage* m_ranks = nullptr;
  EmptyState* m_compareEmpty = nullptr;
  HangView* m_hang = nullptr;
  MessagesPage* m_messages = nullptr;
  LinksPage* m_links = nullptr;
  LearnPage* m_learn = nullptr;
  bool m_stalled = false;
  std::vector<std::pair<QWidget*, RunPage*>> m_runPages;  // tab -> the page in it that shows the run
  std::set<RunPage*> m_dirty;                             // pages not yet showing the latest run data
  bool m_followTimeline = false;                          // the timeline shows an earlier load of the same run
  int m_stallMs = 10000;
  QString m_liveRun;             // the run file of the running (or last) job
  QString m_listedLiveRun;       // the live run already selected in the run list
  bool m_following = false;      // the views show m_liveRun, re-read as it grows
  bool m_followingFile = false;  // m_liveRun is written by a process this window did not start
  CollectDialog* m_collectDialog = nullptr;
  TraceImportJob* m_import = nullptr;
  RunOpenJob* m_opener = nullptr;
  QProgressBar* m_openProgress = nullptr;
  QProgressDialog* m_importProgress = nullptr;
};

}  // namespace ddpscope::gui
