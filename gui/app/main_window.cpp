#include "main_window.h"

#include "window_fit.h"

#include <QTimer>

#include "run_file_watch.h"
#include "user_message.h"

#include <QChartView>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QProgressBar>
#include <QPushButton>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSplitter>
#include <QScrollArea>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <set>

#include "bucket_table_model.h"
#include "buckets_page.h"
#include "graph_page.h"
#include "overlap_page.h"
#include "run_open_job.h"
#include "summary_page.h"
#include "graph_view.h"
#include "compare_page.h"
#include "ranks_page.h"
#include "hang_view.h"
#include "run_file_claim.h"
#include "live_monitor.h"
#include "classroom_controller.h"
#include "learn_page.h"
#include "links_page.h"
#include "lesson_catalog.h"
#include "live_run_loader.h"
#include "messages_page.h"
#include "overlap_model.h"
#include "parameter_bucket_model.h"
#include "run_list_model.h"
#include "splitter_memory.h"
#include "bucket_advice_view.h"
#include "empty_state.h"
#include "shortcuts_dialog.h"
#include "sort_proxy.h"
#include "time_breakdown_page.h"
#include "timeline_detail_loader.h"
#include "timeline_page.h"
#include "timeline_view.h"
#include "plural.h"

namespace ddpscope::gui {

MainWindow::MainWindow(const QString& workspaceFolder, QWidget* parent)
    : QMainWindow(parent),
      m_runList(new RunListModel(this)),
      m_job(new JobController(this)),
      m_live(new LiveRunLoader(this)) {
  setWindowTitle(QStringLiteral("ddpscope"));
  buildViews();
  // The Learn tab: live re-recordings of a lesson go into the workspace, through the CLI.
  m_learn = new LearnPage(workspaceFolder, m_job->cliPath());
  addPage(m_learn, "learn", tr("Learn"));
  connect(m_learn, &LearnPage::statusMessage, this, [this](const QString& text) { statusBar()->showMessage(text); });
  connect(m_learn, &LearnPage::lessonLoaded, m_runList, &RunListModel::refresh);
  ClassroomController* classroom = m_learn->classroom();
  statusBar()->addPermanentWidget(classroom->statusLabel());
  connect(classroom, &ClassroomController::statusMessage, this,
          [this](const QString& text) { statusBar()->showMessage(text); });
  connect(classroom, &ClassroomController::failed, this, &MainWindow::loadFailed);
  connect(classroom, &ClassroomController::showPage, this, [this] { showTab(QStringLiteral("learn")); });
  buildMenus();
  connect(this, &MainWindow::loadFailed, this, [this](const QString& message) {
    statusBar()->showMessage(message);
    showBanner(message, false, false);
  });
  m_fileWatch = new RunFileWatch(this);
  connect(m_fileWatch, &RunFileWatch::stateChanged, this, &MainWindow::onRunFileChanged);

  connect(m_job, &JobController::started, this,
          [this](const QString&, const QString& what) { m_monitor->setStatus(tr("training %1").arg(what), true); });
  connect(m_job, &JobController::progress, m_monitor, &LiveMonitor::setProgress);
  connect(m_job, &JobController::finished, this, &MainWindow::onJobFinished);
  connect(m_job, &JobController::outputLine, this,
          [this](const QString& line) { statusBar()->showMessage(line, 5000); });
  connect(m_monitor, &LiveMonitor::stopRequested, this, &MainWindow::stopJob);
  connect(m_live, &LiveRunLoader::loaded, this, [this](std::shared_ptr<const RunData> run) {
    // A reload that finishes after the user opened another run is not shown over it.
    if (!m_following || QString::fromStdString(run->path) != m_liveRun) return;
    showRun(std::move(run), true);
    // Listed from its first load on, not only once the job ends (once: reloads come 4 a
    // second, and the list's selection does not change between them).
    if (m_listedLiveRun != m_liveRun) {
      m_listedLiveRun = m_liveRun;
      selectInRunList(m_liveRun);
    }
  });
  connect(m_live, &LiveRunLoader::loadFailed, this, &MainWindow::loadFailed);
  connect(m_live, &LiveRunLoader::stalled, this, [this](qint64 ms) {
    m_stalled = true;
    m_dirty.insert(m_hang);
    refreshTab(m_hang);
    showTab(QStringLiteral("hang"));
    statusBar()->showMessage(tr("No progress for %1 s: see the Hang tab").arg(ms / 1000));
  });
  connect(m_live, &LiveRunLoader::resumed, this, [this] {
    m_stalled = false;
    m_dirty.insert(m_hang);
    refreshTab(m_hang);
  });
  m_runList->setFolder(workspaceFolder);
  setUpTraceImport();
  setUpRunOpener();
  fitToScreen(*this);
  m_fittedSize = size();
}

// Once the window manager has framed the window, fit again with the real frame, unless
// someone chose another size meanwhile (--size, a test).
void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (m_fittedSize.isEmpty()) return;
  const bool ours = size() == m_fittedSize;
  m_fittedSize = {};
  if (ours && !isMaximized() && !isFullScreen())
    QTimer::singleShot(200, this, [this] { fitToScreen(*this); });  // once the frame is known
}

MainWindow::~MainWindow() {
  // Ending the job emits finished(): it must not reach a window half torn down.
  m_job->disconnect(this);
  m_live->disconnect(this);
  m_learn->classroom()->end();  // before the status bar it reports to goes
  delete m_job;                 // stops a running job: no rank outlives the app
}

void MainWindow::buildViews() {
  auto* splitter = new QSplitter(this);
  m_mainSplitter = splitter;
  splitter->setObjectName(QStringLiteral("mainSplitter"));  // names: MainWindow::part
  QTableView* runs = buildRunList(splitter);
  m_tabs = new QTabWidget(splitter);
  m_tabs->setObjectName(QStringLiteral("tabs"));
  buildPages();
  auto* right = new QWidget(splitter);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addLayout(buildErrorBanner(right));
  rightLayout->addWidget(m_tabs, 1);
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setChildrenCollapsible(false);
  // The list a fifth of a laptop's window: the run's name elided in the middle (its whole
  // path in the tooltip) so Status and Ranks stay in view; the rest of the width is the
  // run's.
  splitter->setSizes({250, 1030});
  runs->setMinimumWidth(160);
  runs->setTextElideMode(Qt::ElideMiddle);
  runs->setWordWrap(false);  // one line per run, elided in its middle (wrapped, its end was cut)
  runs->horizontalHeader()->setStretchLastSection(false);
  runs->horizontalHeader()->setMinimumSectionSize(40);
  runs->horizontalHeader()->setSectionResizeMode(RunListModel::Name, QHeaderView::Stretch);
  for (int column = RunListModel::Status; column < RunListModel::NumColumns; ++column)
    runs->horizontalHeader()->setSectionResizeMode(column, QHeaderView::ResizeToContents);
  setCentralWidget(splitter);
  rememberSplitters(splitter, QStringLiteral("main"));
}

void MainWindow::setRunListShown(bool shown) { m_runListAction->setChecked(shown); }

bool MainWindow::runListShown() const { return m_runsView->isVisibleTo(this); }

// The list is shown when the user wants it and it has a run; an empty workspace's list
// took a quarter of the window for nothing. Asked for with View > Run list, it shows even
// empty.
void MainWindow::updateRunListVisibility() {
  const bool wanted = m_runListAction->isChecked();
  m_runsView->setVisible(wanted && (m_runList->rowCount() > 0 || m_runListAskedFor));
}

QTableView* MainWindow::buildRunList(QWidget* parent) {
  auto* runs = new QTableView(parent);
  m_runsView = runs;
  runs->setObjectName(QStringLiteral("runs"));
  m_runsProxy = new SortProxy(this);
  m_runsProxy->setSourceModel(m_runList);
  runs->setModel(m_runsProxy);
  runs->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);  // newest first until a header is clicked
  runs->setSortingEnabled(true);
  runs->setSelectionBehavior(QAbstractItemView::SelectRows);
  runs->setSelectionMode(QAbstractItemView::SingleSelection);
  runs->verticalHeader()->hide();
  runs->horizontalHeader()->setStretchLastSection(true);
  // A run opens when the user selects its row (click, arrow keys). Not on the current row
  // changing: the view makes its first row current when it first gets focus, which
  // swapped the run the user had opened for another one.
  connect(runs->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this](const QItemSelection& selected) {
    if (selected.indexes().isEmpty()) return;
    const QString path = selected.indexes().first().data(RunListModel::PathRole).toString();
    if (!m_run || QString::fromStdString(m_run->path) != path) openRunInBackground(path);
  });
  // The list is re-read as runs come and go: keep the open run's row selected.
  connect(m_runList, &QAbstractItemModel::modelReset, this, [this] {
    if (m_run) selectInRunList(QString::fromStdString(m_run->path));
    if (m_runListAction) updateRunListVisibility();
  });

  return runs;
}

void MainWindow::buildPages() {
  m_summary = new SummaryPage;
  // A GPU gap clicked in the Summary: the timeline there.
  connect(m_summary, &SummaryPage::gapClicked, this, [this](int rank, qint64 begin, qint64 end) {
    showRangeInTimeline(
        rank, begin, end,
        tr("rank %1's GPU idle for %2 ms · in the timeline").arg(rank).arg((end - begin) / 1e6, 0, 'f', 3));
  });
  // Scrolled: a long summary (a wide job's ranks, GPU tables) must not set the window's
  // minimum height.
  auto* summaryScroll = new QScrollArea;
  summaryScroll->setWidget(m_summary);
  summaryScroll->setWidgetResizable(true);
  summaryScroll->setFrameShape(QFrame::NoFrame);
  addPage(summaryScroll, "summary", tr("Summary"));

  m_monitor = new LiveMonitor;
  addPage(m_monitor, "live", tr("Live"));

  m_timelineTab = new TimelinePage;
  m_timeline = m_timelineTab->view();
  addPage(m_timelineTab, "timeline", tr("Timeline"), m_timelineTab);
  m_breakdown = new TimeBreakdownPage;
  addPage(m_breakdown, "breakdown", tr("Breakdown"), m_breakdown);
  m_tabs->setTabToolTip(m_tabs->indexOf(m_breakdown), tr("Where the time went: per rank and iteration"));
  m_ranks = new RanksPage;
  addPage(m_ranks, "ranks", tr("Ranks"), m_ranks);
  m_tabs->setTabToolTip(m_tabs->indexOf(m_ranks), tr("Every rank's every iteration at a glance, slowest first"));
  connect(m_ranks, &RanksPage::iterationClicked, this, &MainWindow::showRankIterationInTimeline);
  connect(m_timeline, &TimelineView::spanClicked, this,
          [this](const QString& text) { statusBar()->showMessage(text); });
  buildDetailPages();
  showEmptyStates();
  connect(m_tabs, &QTabWidget::currentChanged, this, [this] { refreshCurrentTab(); });
}

// Errors (a damaged file, a refused launch) in a banner above the views, whole and
// selectable, until the next run opens or the user closes it: a status-bar line was cut
// at the window's edge and replaced by the next message.
QHBoxLayout* MainWindow::buildErrorBanner(QWidget* right) {
  m_errorBanner = new QLabel(right);
  m_errorBanner->setObjectName(QStringLiteral("errorBanner"));
  m_errorBanner->setWordWrap(true);
  m_errorBanner->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_errorBanner->setStyleSheet(
      QStringLiteral("background: #fdecea; color: #8b1a10; padding: 6px; border: 1px solid #e0b4b0"));
  m_errorBanner->hide();
  auto* closeError = new QPushButton(tr("Close"), right);
  closeError->hide();
  connect(closeError, &QPushButton::clicked, this, [this, closeError] {
    m_errorBanner->hide();
    closeError->hide();
    m_reloadRun->hide();
    m_saveCopyButton->hide();
  });
  m_closeError = closeError;
  auto* reload = new QPushButton(tr("Reload"), right);
  reload->hide();
  connect(reload, &QPushButton::clicked, this, [this] {
    if (m_run) openRun(QString::fromStdString(m_run->path));
  });
  m_reloadRun = reload;
  reload->setObjectName(QStringLiteral("reloadRun"));
  auto* saveCopy = new QPushButton(tr("Save a copy..."), right);
  saveCopy->hide();
  connect(saveCopy, &QPushButton::clicked, this, [this] {
    const QString out = QFileDialog::getSaveFileName(this, tr("Save a copy of the run"), m_runList->folder(),
                                                     tr("Run files (*.ddprun)"));
    if (!out.isEmpty()) saveRunCopy(out);
  });
  m_saveCopyButton = saveCopy;
  auto* bannerRow = new QHBoxLayout;
  bannerRow->addWidget(m_errorBanner, 1);
  bannerRow->addWidget(saveCopy, 0, Qt::AlignTop);
  bannerRow->addWidget(reload, 0, Qt::AlignTop);
  bannerRow->addWidget(closeError, 0, Qt::AlignTop);
  return bannerRow;
}

void MainWindow::buildMenus() {
  buildFileMenu();
  buildRunMenu();
  buildViewMenu();
  buildLearnMenu();
  buildHelpMenu();
}

void MainWindow::buildFileMenu() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open run or traces..."), QKeySequence::Open, this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Open a run, or a PyTorch job's profiler traces (one per rank)"), m_runList->folder(),
        tr("Runs and PyTorch traces (*.ddprun *.json *.json.gz);;Run files (*.ddprun);;"
           "PyTorch profiler traces (*.json *.json.gz);;All files (*)"));
    if (paths.size() == 1) openPath(paths.first(), /*background=*/true);
    if (paths.size() > 1) importTraces(paths);  // one trace per rank
  });
  file->addAction(tr("Open PyTorch &traces folder..."), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("A folder of a PyTorch job's profiler traces (one per rank)"), m_runList->folder());
    if (!dir.isEmpty()) importTraces({dir});
  });
  file->addAction(tr("Co&mpare with another run..."), this, [this] {
    // Beside the open run: the run to compare with is most often its neighbour.
    const QString folder = m_run ? QFileInfo(QString::fromStdString(m_run->path)).absolutePath() : m_runList->folder();
    const QString other =
        QFileDialog::getOpenFileName(this, tr("Compare the open run with"), folder, tr("Run files (*.ddprun)"));
    if (!other.isEmpty()) compareWith(other);
  });
  file->addAction(tr("&Refresh runs"), QKeySequence::Refresh, m_runList, &RunListModel::refresh);
  file->addAction(tr("&Save a copy of the run..."), QKeySequence::SaveAs, this, [this] {
    if (!m_run) return;
    const QString out = QFileDialog::getSaveFileName(this, tr("Save a copy of the run"), m_runList->folder(),
                                                     tr("Run files (*.ddprun)"));
    if (!out.isEmpty()) saveRunCopy(out);
  });
  file->addSeparator();
  file->addAction(tr("Export &Chrome trace..."), this, &MainWindow::exportChromeTrace);
  file->addAction(tr("Export view as &PNG..."), this, [this] {
    const QString out = QFileDialog::getSaveFileName(this, tr("Export view"), QString(), tr("PNG image (*.png)"));
    if (!out.isEmpty()) exportViewPng(out);
  });
  file->addAction(tr("Export table as CS&V..."), this, [this] {
    const QString out = QFileDialog::getSaveFileName(this, tr("Export table"), QString(), tr("CSV (*.csv)"));
    if (!out.isEmpty()) exportTableCsv(out);
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
}

void MainWindow::buildViewMenu() {
  QMenu* view = menuBar()->addMenu(tr("&View"));
  // Every tab, the first ten by number too: at 1024x700 the tab bar scrolls, and Compare
  // and Learn (the 11th and 12th) were in no menu. Timeline keys stay on the timeline
  // itself: single-letter menu shortcuts would steal letters typed into fields.
  for (int i = 0; i < m_tabs->count(); ++i) {
    QAction* go = view->addAction(m_tabs->tabText(i), this, [this, i] { m_tabs->setCurrentIndex(i); });
    if (i < 10) go->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg((i + 1) % 10)));
  }
  view->addSeparator();
  m_runListAction = view->addAction(tr("&Run list"));
  m_runListAction->setObjectName(QStringLiteral("runListAction"));
  m_runListAction->setCheckable(true);
  m_runListAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+B")));
  m_runListAction->setChecked(QSettings().value(QStringLiteral("layout/runList"), true).toBool());
  connect(m_runListAction, &QAction::triggered, this, [this](bool on) {
    m_runListAskedFor = on;  // the user's choice: shown even while empty
    QSettings().setValue(QStringLiteral("layout/runList"), on);
    updateRunListVisibility();  // toggled() came first, before the choice was known
  });
  connect(m_runListAction, &QAction::toggled, this, [this] { updateRunListVisibility(); });
  updateRunListVisibility();
  view->addSeparator();
  view->addAction(tr("Timeline: fit the run (F)"), this, [this] {
    showTab(QStringLiteral("timeline"));
    m_timeline->fitAll();
  });
  view->addAction(tr("Timeline: find... (Ctrl+F, /)"), this, [this] {
    showTab(QStringLiteral("timeline"));
    m_timelineTab->showSearch();
  });
  view->addAction(tr("Timeline: collapse every rank"), this, [this] {
    for (const auto& lane : m_timeline->data().lanes)
      m_timeline->setRankCollapsed(lane.rank, true);
  });
  view->addAction(tr("Timeline: expand every rank"), this, [this] {
    for (const auto& lane : m_timeline->data().lanes)
      m_timeline->setRankCollapsed(lane.rank, false);
  });
}

void MainWindow::buildHelpMenu() {
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  m_shortcutsAction = help->addAction(tr("&Keyboard shortcuts"), QKeySequence::HelpContents, this, [this] {
    ShortcutsDialog dialog(this);
    dialog.exec();
  });
  m_shortcutsAction->setObjectName(QStringLiteral("shortcutsAction"));
  help->addAction(tr("&About ddpscope"), this, [this] {
    QMessageBox::about(this, tr("About ddpscope"),
                       tr("<b>ddpscope</b>: a distributed-training engine (DistributedDataParallel and "
                          "distributed autograd over RPC, on OpenMPI and NCCL) with this visual debugger.<br><br>"
                          "Runs are SQLite files written by the engine's probes; every view reads them "
                          "through the run store. See README.md for the two set-up commands and docs/ for the CLI "
                          "(ddpscope-cli train, stats, hang, export), every view and the lessons."));
  });
}

// Tabs are found by an id of their own ("hang"), never by their translated titles.
namespace {
const char* const kTabIdProperty = "ddpscopeTabId";
}

void MainWindow::addPage(QWidget* page, const char* id, const QString& title, RunPage* shows) {
  page->setProperty(kTabIdProperty, QString::fromLatin1(id));
  m_tabs->addTab(page, title);
  rememberSplitters(page, QString::fromLatin1(id));
  if (shows) m_runPages.emplace_back(page, shows);
}

RunPage* MainWindow::runPageAt(int index) const {
  const QWidget* tab = m_tabs->widget(index);
  for (const auto& [widget, page] : m_runPages)
    if (widget == tab) return page;
  return nullptr;
}

int MainWindow::tabIndex(const QString& id) const {
  for (int i = 0; i < m_tabs->count(); ++i) {
    if (m_tabs->widget(i)->property(kTabIdProperty).toString().compare(id, Qt::CaseInsensitive) == 0) return i;
  }
  return -1;
}

void MainWindow::showTab(const QString& id) {
  if (const int i = tabIndex(id); i >= 0) m_tabs->setCurrentIndex(i);
}

bool MainWindow::returnToJob(const QString& path) {
  if (!m_job->isActive() || m_liveRun.isEmpty() || path != m_liveRun) return false;
  if (!m_following) {  // back to the running job
    m_following = true;
    m_stalled = false;
    m_live->watch(m_liveRun, 250, m_stallMs);
    statusBar()->showMessage(tr("Following the running job again"));
  }
  return true;
}

bool MainWindow::openRun(const QString& path) {
  m_opener->cancel();  // a file still loading in the background must not replace this one
  if (returnToJob(path)) return true;
  std::shared_ptr<const RunData> run;
  try {
    run = std::make_shared<const RunData>(loadRun(path.toStdString()));
  } catch (const std::exception& e) {
    // No exception crosses the event loop: the window says what went wrong.
    emit loadFailed(tr("Cannot open %1: %2").arg(path, userMessage(e)));
    return false;
  }
  showOpenedRun(path, std::move(run));
  return true;
}

void MainWindow::openRunInBackground(const QString& path) {
  if (returnToJob(path)) {
    m_opener->cancel();
    return;
  }
  m_opener->open(path);
}

void MainWindow::setUpRunOpener() {
  m_opener = new RunOpenJob(this);
  m_openProgress = new QProgressBar;
  m_openProgress->setObjectName(QStringLiteral("openProgress"));
  m_openProgress->setRange(0, 0);  // busy: a run file's load has no count to show
  m_openProgress->setMaximumWidth(160);
  m_openProgress->hide();
  statusBar()->addPermanentWidget(m_openProgress);
  connect(m_opener, &RunOpenJob::started, this, [this](const QString& path) {
    m_openProgress->show();
    statusBar()->showMessage(tr("Opening %1...").arg(QFileInfo(path).fileName()));
  });
  connect(m_opener, &RunOpenJob::opened, this, [this](const QString& path, std::shared_ptr<const RunData> run) {
    m_openProgress->hide();
    showOpenedRun(path, std::move(run));
  });
  connect(m_opener, &RunOpenJob::failed, this, [this](const QString& path, const QString& message) {
    m_openProgress->hide();
    if (m_run) selectInRunList(QString::fromStdString(m_run->path));  // the list shows what is open
    emit loadFailed(tr("Cannot open %1: %2").arg(path, message));
  });
}

void MainWindow::showOpenedRun(const QString& path, std::shared_ptr<const RunData> run) {
  // The job, if one runs, goes on (its progress stays on the Live tab); its run file is
  // no longer re-read until the user comes back to it.
  m_live->cancel();
  m_following = false;
  if (!m_job->isActive()) m_liveRun.clear();
  m_stalled = false;
  showRun(std::move(run), false);
  selectInRunList(path);
  m_errorBanner->hide();  // an earlier error no longer applies
  m_closeError->hide();
  m_reloadRun->hide();
  m_saveCopyButton->hide();
  if (m_job->isActive() && !m_liveRun.isEmpty()) {
    statusBar()->showMessage(tr("%1: %2. The job still runs: Run > Follow job returns to it")
                                 .arg(path)
                                 .arg(countOf(m_run->span_count, tr("span"))));
  } else {
    statusBar()->showMessage(tr("%1: %2").arg(path).arg(countOf(m_run->span_count, tr("span"))));
  }
}

void MainWindow::updateJobActions() {
  // Only with a job running: without one, both would do nothing, silently.
  m_followAction->setEnabled(m_job->isActive());
  m_stopAction->setEnabled(m_job->isActive());
}

void MainWindow::selectInRunList(const QString& path) {
  // Shows which run is open (current and selected) without reopening it; a run from
  // outside the workspace is listed first.
  const QString wanted = QFileInfo(path).absoluteFilePath();
  bool listed = false;
  for (int row = 0; row < m_runList->rowCount() && !listed; ++row)
    listed = QFileInfo(m_runList->index(row, 0).data(RunListModel::PathRole).toString()).absoluteFilePath() == wanted;
  // Not listed: from outside the workspace, or new in it since the list was read (a
  // running job's file, listed from its first live load on, not only once it ends).
  if (!listed && !m_rereadingRunList && QFileInfo(QFileInfo(path).absolutePath()) == QFileInfo(m_runList->folder())) {
    m_rereadingRunList = true;  // once: a file the list does not take (not *.ddprun) must not loop
    m_runList->refresh();       // its modelReset comes back here and selects the row
    m_rereadingRunList = false;
    return;
  }
  if (!listed) m_runList->addOutside(path);
  const QSignalBlocker block(m_runsView->selectionModel());
  for (int row = 0; row < m_runList->rowCount(); ++row) {
    const QModelIndex index = m_runList->index(row, 0);
    if (QFileInfo(index.data(RunListModel::PathRole).toString()).absoluteFilePath() == wanted) {
      m_runsView->selectionModel()->setCurrentIndex(m_runsProxy->mapFromSource(index),
                                                    QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      m_runsView->viewport()->update();
      return;
    }
  }
  m_runsView->selectionModel()->clearSelection();
}

void MainWindow::showEmptyStates() {
  const QString noRun =
      tr("No run open.\n\nOpen one from the list on the left (or File ▸ Open run or traces..., "
         "or drop a PyTorch job's traces here), or launch a job: Run ▸ Launch job... (Ctrl+L).");
  if (!m_run) {
    for (EmptyState* e : {m_overlapPage->emptyState(), m_bucketPage->emptyState(), m_graphPage->emptyState(),
                          m_messagesEmpty, m_hangEmpty, m_links->emptyState()})
      e->setEmpty(noRun);
    return;
  }
  const bool ddp = !m_run->analysis.iterations.empty();
  const QString noDdp =
      tr("This run recorded no DDP training iterations (an RPC or distributed-autograd run, or "
         "a job that ended before its first iteration), so there is nothing to show here.\n\n"
         "See its Timeline, Messages and Graph tabs; DDP runs come from ddpscope-cli train.");
  m_overlapPage->emptyState()->setEmpty(ddp ? QString() : noDdp);
  m_bucketPage->emptyState()->setEmpty(ddp || !m_run->buckets.empty() ? QString() : noDdp);
  m_graphPage->emptyState()->setEmpty(
      m_run->graph.nodes.empty() && m_run->dist_graphs.empty()
          ? tr("No autograd graph was recorded in this run.\n\nTraining jobs record the graph "
               "of their first iteration; distributed-autograd examples (ddpscope-cli example) "
               "record each pass.")
          : QString());
  m_messagesEmpty->setEmpty(m_run->sequence.arrows.empty()
                                ? tr("No RPC messages in this run: DDP jobs talk through collectives, which the "
                                     "Timeline and Overlap tabs show.\n\nRPC runs come from ddpscope-cli example "
                                     "(seed, chain, rref, parameter-server).")
                                : QString());
  m_hangEmpty->setEmpty(QString());
}

void MainWindow::showRun(std::shared_ptr<const RunData> run, bool live) {
  const bool sameRun = m_run && run && m_run->path == run->path;
  for (const auto& [widget, page] : m_runPages)
    page->releaseRun(sameRun);
  m_run = std::move(run);
  // A new file (not a live reload of the same one): watch it on disk from now on.
  if (!sameRun || m_fileWatch->path().isEmpty() || m_fileWatch->state() == RunFileWatch::State::Replaced)
    m_fileWatch->watch(QString::fromStdString(m_run->path));
  setWindowTitle(QStringLiteral("ddpscope — %1%2")
                     .arg(QFileInfo(QString::fromStdString(m_run->path)).fileName(),
                          live && m_job->isActive() ? tr(" (live)") : QString()));
  m_summary->setRun(*m_run);
  // The charts show any run's metrics: live as it grows, or a finished file's curves.
  m_monitor->setRun(*m_run, live);
  if (!live && !m_job->isActive()) {
    m_monitor->setStatus(LiveMonitor::finishedStatus(*m_run, QFileInfo(QString::fromStdString(m_run->path)).fileName()),
                         false);
  }
  // A live reload refreshes the tab on screen and marks the others for when they are
  // shown: rebuilding every view two to four times a second would starve the job.
  m_dirty.clear();
  for (const auto& [widget, page] : m_runPages)
    m_dirty.insert(page);
  m_followTimeline = sameRun;
  // A big run fills each page when it is first shown: the Buckets page's advice alone
  // reads every gradient-ready tick (seconds for 100M spans).
  if (live || m_run->span_count > detailAtOpen()) {
    refreshCurrentTab();
  } else {
    for (const auto& [widget, page] : m_runPages)
      refreshTab(page);
  }
  showEmptyStates();
  emit runShown();
}

bool MainWindow::tabIsEmpty(const QString& id) const {
  const int i = tabIndex(id);
  if (i < 0) return false;
  if (auto* e = qobject_cast<EmptyState*>(m_tabs->widget(i))) return e->isEmpty();
  for (auto* e : m_tabs->widget(i)->findChildren<EmptyState*>())
    return e->isEmpty();
  return false;
}

void MainWindow::refreshCurrentTab() {
  RunPage* page = runPageAt(m_tabs->currentIndex());
  m_live->setWantHang(page == m_hang);  // live reloads skip the hang analysis otherwise
  refreshTab(page);
}

// The page shows the run now, if it has not yet since the run changed.
void MainWindow::refreshTab(RunPage* page) {
  if (!m_run || !page || !m_dirty.count(page)) return;
  m_dirty.erase(page);
  page->showRun({m_run, m_followTimeline, m_fileWatch->reader(), m_stalled, m_job->isActive() && m_following});
}

void MainWindow::showIterationInTimeline(int64_t iteration) {
  showTab(QStringLiteral("timeline"));
  const auto& its = m_timeline->data().iterations;
  for (size_t i = 0; i < its.size(); ++i) {
    if (its[i].number == iteration) {
      m_timeline->showIteration(static_cast<int>(i));
      statusBar()->showMessage(tr("Iteration %1 in the timeline").arg(iteration));
      return;
    }
  }
}

void MainWindow::showRankIterationInTimeline(int rank, int64_t iteration) {
  if (!m_run) return;
  for (const auto& it : m_run->analysis.iterations) {
    if (it.rank != rank || it.iteration != iteration) continue;
    showRangeInTimeline(rank, it.t_begin_ns, it.t_end_ns,
                        tr("Rank %1, iteration %2 in the timeline").arg(rank).arg(iteration));
    return;
  }
}

// The Timeline tab at `rank`'s [begin, end), that rank expanded, `said` in the status bar.
void MainWindow::showRangeInTimeline(int rank, int64_t begin, int64_t end, const QString& said) {
  refreshTab(m_timelineTab);
  showTab(QStringLiteral("timeline"));
  m_timeline->showTimeRange(rank, begin, end);
  statusBar()->showMessage(said);
}

void MainWindow::showBanner(const QString& message, bool reload, bool saveCopy) {
  m_errorBanner->setText(message);
  m_errorBanner->show();
  m_closeError->show();
  m_reloadRun->setVisible(reload);
  m_saveCopyButton->setVisible(saveCopy);
}

void MainWindow::onRunFileChanged() {
  switch (m_fileWatch->state()) {
    case RunFileWatch::State::Deleted: showBanner(m_fileWatch->description(), false, true); break;
    case RunFileWatch::State::Replaced:
      showBanner(m_fileWatch->description(), true, m_fileWatch->reader() != nullptr);
      break;
    default: break;
  }
  if (m_fileWatch->state() != RunFileWatch::State::Intact) statusBar()->showMessage(m_fileWatch->description());
}

bool MainWindow::saveRunCopy(const QString& path) {
  QString error;
  if (!m_run || !m_fileWatch->saveCopy(path, &error)) {
    emit loadFailed(tr("Cannot save a copy of the run as %1: %2").arg(path, m_run ? error : tr("no run is open")));
    return false;
  }
  statusBar()->showMessage(tr("Saved a copy of the run as %1").arg(path));
  m_runList->refresh();
  return true;
}

// The pages' parts, for tests and scripts.
}  // namespace ddpscope::gui
