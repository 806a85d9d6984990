#include "main_window.h"

#include "run_file_watch.h"
#include "user_message.h"

#include <QBarCategoryAxis>
#include <QCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QPushButton>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>
#include <cmath>
#include <set>

#include "bucket_table_model.h"
#include "graph_view.h"
#include "hang_view.h"
#include "live_monitor.h"
#include "learn_page.h"
#include "lesson_catalog.h"
#include "live_run_loader.h"
#include "messages_page.h"
#include "overlap_model.h"
#include "parameter_bucket_model.h"
#include "run_list_model.h"
#include "bucket_advice_view.h"
#include "chart_theme.h"
#include "kind_colors.h"
#include "empty_state.h"
#include "shortcuts_dialog.h"
#include "sort_proxy.h"
#include "time_breakdown_page.h"
#include "timeline_page.h"
#include "timeline_view.h"

namespace ddpscope::gui {
namespace {

// Every table sorts by a click on its header (by value, through SortProxy).
QTableView* makeTable(QAbstractItemModel* model) {
  auto* table = new QTableView;
  auto* proxy = new SortProxy(table);
  proxy->setSourceModel(model);
  table->setModel(proxy);
  // The model's own order until a header is clicked (enabling sorting would otherwise
  // sort by the first column, descending).
  table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  table->setSortingEnabled(true);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  return table;
}

}  // namespace

MainWindow::MainWindow(const QString& workspaceFolder, QWidget* parent)
    : QMainWindow(parent),
      m_runList(new RunListModel(this)),
      m_buckets(new BucketTableModel(this)),
      m_overlap(new OverlapModel(this)),
      m_params(new ParameterBucketModel(this)),
      m_job(new JobController(this)),
      m_live(new LiveRunLoader(this)) {
  setWindowTitle(QStringLiteral("ddpscope"));
  buildViews();
  // The Learn tab: live re-recordings of a lesson go into the workspace, through the CLI.
  m_learn = new LearnPage(workspaceFolder, m_job->cliPath());
  addPage(m_learn, "learn", tr("Learn"));
  connect(m_learn, &LearnPage::statusMessage, this, [this](const QString& text) { statusBar()->showMessage(text); });
  connect(m_learn, &LearnPage::lessonLoaded, m_runList, &RunListModel::refresh);
  buildMenus();
  connect(this, &MainWindow::loadFailed, this, [this](const QString& message) {
    statusBar()->showMessage(message);
    showBanner(message, false, false);
  });
  m_fileWatch = new RunFileWatch(this);
  connect(m_fileWatch, &RunFileWatch::stateChanged, this, &MainWindow::onRunFileChanged);

  connect(m_job, &JobController::started, this, [this](const QString&, const QString& what) {
    m_monitor->setStatus(tr("training %1").arg(what), true);
  });
  connect(m_job, &JobController::progress, m_monitor, &LiveMonitor::setProgress);
  connect(m_job, &JobController::finished, this, &MainWindow::onJobFinished);
  connect(m_job, &JobController::outputLine, this,
          [this](const QString& line) { statusBar()->showMessage(line, 5000); });
  connect(m_monitor, &LiveMonitor::stopRequested, this, &MainWindow::stopJob);
  connect(m_live, &LiveRunLoader::loaded, this, [this](std::shared_ptr<const RunData> run) {
    // A reload that finishes after the user opened another run is not shown over it.
    if (m_following && QString::fromStdString(run->path) == m_liveRun)
      showRun(std::move(run), true);
  });
  connect(m_live, &LiveRunLoader::loadFailed, this, &MainWindow::loadFailed);
  connect(m_live, &LiveRunLoader::stalled, this, [this](qint64 ms) {
    m_stalled = true;
    updateHang(true);
    showTab(QStringLiteral("hang"));
    statusBar()->showMessage(tr("No progress for %1 s: see the Hang tab").arg(ms / 1000));
  });
  connect(m_live, &LiveRunLoader::resumed, this, [this] {
    m_stalled = false;
    updateHang(false);
  });
  m_runList->setFolder(workspaceFolder);
  setUpTraceImport();
  resize(1280, 800);
}

MainWindow::~MainWindow() {
  // Ending the job emits finished(): it must not reach a window half torn down.
  m_job->disconnect(this);
  m_live->disconnect(this);
  delete m_job;  // stops a running job: no rank outlives the app
}

void MainWindow::buildViews() {
  auto* splitter = new QSplitter(this);
  auto* runs = new QTableView(splitter);
  m_runsView = runs;
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
  connect(runs->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          [this](const QItemSelection& selected) {
            if (selected.indexes().isEmpty()) return;
            const QString path = selected.indexes().first().data(RunListModel::PathRole).toString();
            if (!m_run || QString::fromStdString(m_run->path) != path) openRun(path);
          });
  // The list is re-read as runs come and go: keep the open run's row selected.
  connect(m_runList, &QAbstractItemModel::modelReset, this, [this] {
    if (m_run) selectInRunList(QString::fromStdString(m_run->path));
  });

  m_tabs = new QTabWidget(splitter);
  m_summary =
      new QLabel(tr("Open a run: pick one on the left or use File > Open (a PyTorch job's profiler "
                    "traces too: a folder or the files, or drop them here). Or launch a job: Run > Launch job."));
  m_summary->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_summary->setMargin(12);
  m_summary->setWordWrap(true);
  addPage(m_summary, "summary", tr("Summary"));

  m_monitor = new LiveMonitor;
  addPage(m_monitor, "live", tr("Live"));

  m_timelineTab = new TimelinePage;
  m_timeline = m_timelineTab->view();
  addPage(m_timelineTab, "timeline", tr("Timeline"));
  m_timelinePage = m_timelineTab;
  m_breakdown = new TimeBreakdownPage;
  addPage(m_breakdown, "breakdown", tr("Breakdown"));
  m_tabs->setTabToolTip(m_tabs->indexOf(m_breakdown), tr("Where the time went: per rank and iteration"));
  connect(m_timeline, &TimelineView::spanClicked, this,
          [this](const QString& text) { statusBar()->showMessage(text); });

  auto* overlapPage = new QWidget;
  auto* overlapLayout = new QVBoxLayout(overlapPage);
  auto* overlapBar = new QHBoxLayout;
  m_overlapRank = new QComboBox;
  overlapBar->addWidget(new QLabel(tr("Rank")));
  overlapBar->addWidget(m_overlapRank);
  overlapBar->addWidget(
      new QLabel(tr("Orange rows and bars: this rank was the straggler (its "
                    "allreduces started last).")));
  overlapBar->addStretch();
  overlapLayout->addLayout(overlapBar);
  m_overlapChart = new QChartView;
  m_overlapChart->setRenderHint(QPainter::Antialiasing);
  m_overlapChart->setMinimumHeight(260);
  auto* overlapContent = new QWidget;
  auto* overlapContentLayout = new QVBoxLayout(overlapContent);
  overlapContentLayout->setContentsMargins(0, 0, 0, 0);
  overlapContentLayout->addWidget(m_overlapChart, 2);
  m_overlapTable = makeTable(m_overlap);
  m_overlapTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  overlapContentLayout->addWidget(m_overlapTable, 1);
  m_overlapEmpty = new EmptyState(overlapContent);
  overlapLayout->addWidget(m_overlapEmpty, 1);
  connect(m_overlapRank, &QComboBox::currentIndexChanged, this, [this] { updateOverlap(); });
  addPage(overlapPage, "overlap", tr("Overlap"));
  m_overlapPage = overlapPage;

  auto* bucketPage = new QWidget;
  auto* bucketLayout = new QVBoxLayout(bucketPage);
  auto* bucketBar = new QHBoxLayout;
  m_bucketRank = new QComboBox;
  m_bucketIteration = new QSpinBox;
  bucketBar->addWidget(new QLabel(tr("Rank")));
  bucketBar->addWidget(m_bucketRank);
  bucketBar->addWidget(new QLabel(tr("Iteration")));
  bucketBar->addWidget(m_bucketIteration);
  m_rebuildNote = new QLabel;
  bucketBar->addWidget(m_rebuildNote);
  bucketBar->addStretch();
  bucketLayout->addLayout(bucketBar);
  auto* bucketSplit = new QSplitter(Qt::Vertical);
  m_bucketTable = makeTable(m_buckets);
  m_paramTable = makeTable(m_params);
  m_paramTable->setWordWrap(false);
  m_paramTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_bucketTable->setWordWrap(false);
  m_bucketAdvice = new BucketAdviceView;
  bucketSplit->addWidget(m_bucketAdvice);
  bucketSplit->addWidget(m_bucketTable);
  bucketSplit->addWidget(m_paramTable);
  m_bucketTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_bucketTable->horizontalHeader()->setStretchLastSection(true);
  m_bucketsEmpty = new EmptyState(bucketSplit);
  bucketLayout->addWidget(m_bucketsEmpty, 1);
  connect(m_bucketRank, &QComboBox::currentIndexChanged, this, [this] { updateBuckets(); });
  connect(m_bucketIteration, &QSpinBox::valueChanged, this, [this] { updateBuckets(); });
  addPage(bucketPage, "buckets", tr("Buckets"));
  m_bucketPage = bucketPage;

  auto* graphPage = new QWidget;
  auto* graphLayout = new QVBoxLayout(graphPage);
  auto* graphBar = new QHBoxLayout;
  m_graphChoice = new QComboBox;
  m_graphChoice->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  graphBar->addWidget(new QLabel(tr("Graph")));
  graphBar->addWidget(m_graphChoice);
  m_graphCollapse = new QCheckBox(tr("Collapse by module"));
  graphBar->addWidget(m_graphCollapse);
  graphBar->addStretch();
  graphLayout->addLayout(graphBar);
  connect(m_graphChoice, &QComboBox::currentIndexChanged, this, [this] { showChosenGraph(); });
  m_graph = new GraphView;
  m_graphEmpty = new EmptyState(m_graph);
  graphLayout->addWidget(m_graphEmpty, 1);
  connect(m_graphCollapse, &QCheckBox::toggled, m_graph, &GraphView::setCollapsed);
  connect(m_graph, &GraphView::nodeClicked, this,
          [this](const QString& text) { statusBar()->showMessage(text); });
  addPage(graphPage, "graph", tr("Graph"));
  m_graphPage = graphPage;

  m_messages = new MessagesPage;
  m_messagesEmpty = new EmptyState(m_messages);
  addPage(m_messagesEmpty, "messages", tr("Messages"));
  // A message picked there is selected in the timeline too, both ends ringed.
  connect(m_messages->view(), &SequenceView::arrowSelected, this,
          [this](const QString& text, int src, qint64 sendNs, int dst, qint64 recvNs) {
            refreshTab(Tab::Timeline);  // the timeline must hold this run's flows
            const bool shown = m_timeline->selectFlow(src, sendNs, dst, recvNs);
            statusBar()->showMessage(shown ? text + tr(" · selected in the timeline") : text);
          });

  m_hang = new HangView;
  m_hangEmpty = new EmptyState(m_hang);
  addPage(m_hangEmpty, "hang", tr("Hang"));
  showEmptyStates();

  connect(m_tabs, &QTabWidget::currentChanged, this, [this] { refreshCurrentTab(); });
  // Errors (a damaged file, a refused launch) in a banner above the views, whole and
  // selectable, until the next run opens or the user closes it: a status-bar line was cut
  // at the window's edge and replaced by the next message.
  auto* right = new QWidget(splitter);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  m_errorBanner = new QLabel(right);
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
  rightLayout->addLayout(bannerRow);
  rightLayout->addWidget(m_tabs, 1);
  splitter->addWidget(right);
  splitter->setStretchFactor(1, 3);
  splitter->setSizes({330, 950});
  runs->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  setCentralWidget(splitter);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open run or traces..."), QKeySequence::Open, this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Open a run, or a PyTorch job's profiler traces (one per rank)"), m_runList->folder(),
        tr("Runs and PyTorch traces (*.ddprun *.json *.json.gz);;Run files (*.ddprun);;"
           "PyTorch profiler traces (*.json *.json.gz);;All files (*)"));
    if (paths.size() == 1) openPath(paths.first());
    if (paths.size() > 1) importTraces(paths);  // one trace per rank
  });
  file->addAction(tr("Open PyTorch &traces folder..."), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("A folder of a PyTorch job's profiler traces (one per rank)"), m_runList->folder());
    if (!dir.isEmpty()) importTraces({dir});
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
    const QString out =
        QFileDialog::getSaveFileName(this, tr("Export view"), QString(), tr("PNG image (*.png)"));
    if (!out.isEmpty()) exportViewPng(out);
  });
  file->addAction(tr("Export table as CS&V..."), this, [this] {
    const QString out =
        QFileDialog::getSaveFileName(this, tr("Export table"), QString(), tr("CSV (*.csv)"));
    if (!out.isEmpty()) exportTableCsv(out);
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(tr("&Launch job..."), QKeySequence(tr("Ctrl+L")), this,
                 &MainWindow::showLaunchDialog);
  m_followAction = run->addAction(tr("&Follow job"), this, &MainWindow::followJob);
  m_stopAction = run->addAction(tr("&Stop job"), this, &MainWindow::stopJob);
  updateJobActions();
  connect(m_job, &JobController::finished, this, &MainWindow::updateJobActions);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  // Tabs by number. Timeline keys stay on the timeline itself: single-letter menu
  // shortcuts would steal letters typed into fields.
  for (int i = 0; i < m_tabs->count() && i < 10; ++i) {
    view->addAction(m_tabs->tabText(i), QKeySequence(QStringLiteral("Ctrl+%1").arg((i + 1) % 10)), this,
                    [this, i] { m_tabs->setCurrentIndex(i); });
  }
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
    for (const auto& lane : m_timeline->data().lanes) m_timeline->setRankCollapsed(lane.rank, true);
  });
  view->addAction(tr("Timeline: expand every rank"), this, [this] {
    for (const auto& lane : m_timeline->data().lanes) m_timeline->setRankCollapsed(lane.rank, false);
  });
  QMenu* learn = menuBar()->addMenu(tr("L&earn"));
  for (size_t i = 0; i < lessons().size(); ++i)
    learn->addAction(lessons()[i].title, this, [this, i] { openLesson(static_cast<int>(i)); });
  learn->addSeparator();
  learn->addAction(tr("Replay the &open run"), this, [this] {
    QString error;
    if (!m_run || !m_learn->openRun(QString::fromStdString(m_run->path), &error)) {
      statusBar()->showMessage(m_run ? error : tr("Open a run first"));
      return;
    }
    showTab(QStringLiteral("learn"));
  });
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  m_shortcutsAction = help->addAction(tr("&Keyboard shortcuts"), QKeySequence::HelpContents, this, [this] {
    ShortcutsDialog dialog(this);
    dialog.exec();
  });
  help->addAction(tr("&About ddpscope"), this, [this] {
    QMessageBox::about(this, tr("About ddpscope"),
                       tr("<b>ddpscope</b>: a distributed-training engine (DistributedDataParallel and "
                          "distributed autograd over RPC, on OpenMPI and NCCL) with this visual debugger.<br><br>"
                          "Runs are SQLite files written by the engine's probes; every view reads them "
                          "through the run store. See README.md for the two set-up commands, the CLI "
                          "(ddpscope-cli train, stats, hang, export) and the lessons."));
  });
}

bool MainWindow::openLesson(int index) {
  QString error;
  if (!m_learn->openLesson(index, &error)) {
    statusBar()->showMessage(error);
    return false;
  }
  showTab(QStringLiteral("learn"));
  m_learn->setFocus();
  return true;
}

// Tabs are found by an id of their own ("hang"), never by their translated titles.
namespace {
const char* const kTabIdProperty = "ddpscopeTabId";
}

void MainWindow::addPage(QWidget* page, const char* id, const QString& title) {
  page->setProperty(kTabIdProperty, QString::fromLatin1(id));
  m_tabs->addTab(page, title);
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

bool MainWindow::openRun(const QString& path) {
  if (m_job->isActive() && !m_liveRun.isEmpty() && path == m_liveRun) {
    if (!m_following) {  // back to the running job
      m_following = true;
      m_stalled = false;
      m_live->watch(m_liveRun, 250, m_stallMs);
      statusBar()->showMessage(tr("Following the running job again"));
    }
    return true;
  }
  std::shared_ptr<const RunData> run;
  try {
    run = std::make_shared<const RunData>(load_run(path.toStdString()));
  } catch (const std::exception& e) {
    // No exception crosses the event loop: the window says what went wrong.
    emit loadFailed(tr("Cannot open %1: %2").arg(path, userMessage(e)));
    return false;
  }
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
    statusBar()->showMessage(tr("%1: %2 spans. The job still runs: Run > Follow job returns to it")
                                 .arg(path)
                                 .arg(m_run->span_count));
  } else {
    statusBar()->showMessage(tr("%1: %2 spans").arg(path).arg(m_run->span_count));
  }
  return true;
}

void MainWindow::updateJobActions() {
  // Only with a job running: without one, both would do nothing, silently.
  m_followAction->setEnabled(m_job->isActive());
  m_stopAction->setEnabled(m_job->isActive());
}

void MainWindow::selectInRunList(const QString& path) {
  // Shows which run is open (current and selected) without reopening it.
  const QSignalBlocker block(m_runsView->selectionModel());
  const QString wanted = QFileInfo(path).absoluteFilePath();
  for (int row = 0; row < m_runList->rowCount(); ++row) {
    const QModelIndex index = m_runList->index(row, 0);
    if (QFileInfo(index.data(RunListModel::PathRole).toString()).absoluteFilePath() == wanted) {
      m_runsView->selectionModel()->setCurrentIndex(
          m_runsProxy->mapFromSource(index), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      m_runsView->viewport()->update();
      return;
    }
  }
  m_runsView->selectionModel()->clearSelection();
}

void MainWindow::showEmptyStates() {
  const QString noRun = tr("No run open.\n\nOpen one from the list on the left (or File ▸ Open run or traces..., "
                           "or drop a PyTorch job's traces here), or launch a job: Run ▸ Launch job... (Ctrl+L).");
  if (!m_run) {
    for (EmptyState* e : {m_overlapEmpty, m_bucketsEmpty, m_graphEmpty, m_messagesEmpty, m_hangEmpty}) e->setEmpty(noRun);
    return;
  }
  const bool ddp = !m_run->analysis.iterations.empty();
  const QString noDdp = tr("This run recorded no DDP training iterations (an RPC or distributed-autograd run, or "
                           "a job that ended before its first iteration), so there is nothing to show here.\n\n"
                           "See its Timeline, Messages and Graph tabs; DDP runs come from ddpscope-cli train.");
  m_overlapEmpty->setEmpty(ddp ? QString() : noDdp);
  m_bucketsEmpty->setEmpty(ddp || !m_run->buckets.empty() ? QString() : noDdp);
  m_graphEmpty->setEmpty(m_run->graph.nodes.empty() && m_run->dist_graphs.empty()
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
  m_buckets->setRun(nullptr, 0, 0);
  m_overlap->setRun(nullptr);
  m_run = std::move(run);
  // A new file (not a live reload of the same one): watch it on disk from now on.
  if (!sameRun || m_fileWatch->path().isEmpty() || m_fileWatch->state() == RunFileWatch::State::Replaced)
    m_fileWatch->watch(QString::fromStdString(m_run->path));
  setWindowTitle(QStringLiteral("ddpscope — %1%2")
                     .arg(QFileInfo(QString::fromStdString(m_run->path)).fileName(),
                          live && m_job->isActive() ? tr(" (live)") : QString()));
  const int overlapRank = m_overlapRank->currentIndex();
  const int bucketRank = m_bucketRank->currentIndex();
  const int bucketIteration = m_bucketIteration->value();
  {
    const QSignalBlocker a(m_overlapRank), b(m_bucketRank), c(m_bucketIteration);
    m_overlapRank->clear();
    m_bucketRank->clear();
    for (const auto& r : m_run->ranks) {
      m_overlapRank->addItem(QString::number(r.rank), r.rank);
      m_bucketRank->addItem(QString::number(r.rank), r.rank);
    }
    int64_t last = 1;
    for (const auto& it : m_run->analysis.iterations)
      last = std::max(last, it.iteration);
    m_bucketIteration->setRange(1, static_cast<int>(last));
    if (sameRun) {
      // A live reload keeps what the user picked.
      m_overlapRank->setCurrentIndex(std::max(0, overlapRank));
      m_bucketRank->setCurrentIndex(std::max(0, bucketRank));
      m_bucketIteration->setValue(bucketIteration);
    } else {
      m_bucketIteration->setValue(std::min<int>(2, static_cast<int>(last)));  // past warm-up
    }
  }
  showSummary();
  // The charts show any run's metrics: live as it grows, or a finished file's curves.
  m_monitor->setRun(*m_run, live);
  if (!live && !m_job->isActive()) {
    m_monitor->setStatus(
        tr("%1: %2 iterations recorded (%3)")
            .arg(QFileInfo(QString::fromStdString(m_run->path)).fileName())
            .arg(m_run->analysis.iterations.empty() ? 0
                                                    : m_run->analysis.iterations.back().iteration)
            .arg(QString::fromStdString(m_run->run.status)),
        false);
  }
  // A live reload refreshes the tab on screen and marks the others for when they are
  // shown: rebuilding every view two to four times a second would starve the job.
  m_dirty = {Tab::Timeline, Tab::Breakdown, Tab::Overlap, Tab::Buckets, Tab::Graph, Tab::Messages, Tab::Hang};
  m_followTimeline = sameRun;
  if (live) {
    refreshCurrentTab();
  } else {
    for (Tab t : {Tab::Timeline, Tab::Breakdown, Tab::Overlap, Tab::Buckets, Tab::Graph, Tab::Messages, Tab::Hang})
      refreshTab(t);
  }
  showEmptyStates();
  emit runShown();
}

bool MainWindow::tabIsEmpty(const QString& id) const {
  const int i = tabIndex(id);
  if (i < 0) return false;
  if (auto* e = qobject_cast<EmptyState*>(m_tabs->widget(i))) return e->isEmpty();
  for (auto* e : m_tabs->widget(i)->findChildren<EmptyState*>()) return e->isEmpty();
  return false;
}

MainWindow::Tab MainWindow::tabOf(int index) const {
  QWidget* w = m_tabs->widget(index);
  if (w == m_timelinePage) return Tab::Timeline;
  if (w == m_breakdown) return Tab::Breakdown;
  if (w == m_overlapPage) return Tab::Overlap;
  if (w == m_bucketPage) return Tab::Buckets;
  if (w == m_graphPage) return Tab::Graph;
  if (w == m_hangEmpty) return Tab::Hang;
  if (w == m_messagesEmpty) return Tab::Messages;
  return Tab::Other;
}

void MainWindow::refreshCurrentTab() {
  const Tab tab = tabOf(m_tabs->currentIndex());
  m_live->setWantHang(tab == Tab::Hang);  // live reloads skip the hang analysis otherwise
  refreshTab(tab);
}

void MainWindow::refreshTab(Tab tab) {
  if (!m_run || !m_dirty.count(tab)) return;
  m_dirty.erase(tab);
  switch (tab) {
    case Tab::Timeline: {
      // Shares the run's timeline: no copy of its spans.
      std::shared_ptr<const TimelineData> timeline(m_run, &m_run->timeline);
      if (m_followTimeline) {
        m_timeline->updateData(std::move(timeline));
      } else {
        m_timeline->setData(std::move(timeline));
        m_timeline->showIteration(m_run->timeline.iterations.size() > 1 ? 1 : 0);  // past warm-up
      }
      m_timelineTab->refreshLegend();
      break;
    }
    case Tab::Breakdown:
      m_breakdown->setRun(m_run);
      break;
    case Tab::Overlap:
      updateOverlap();
      break;
    case Tab::Buckets:
      updateBuckets();
      break;
    case Tab::Graph:
      updateGraphChoices();
      break;
    case Tab::Messages:
      m_messages->setRun(m_run, m_followTimeline);
      break;
    case Tab::Hang:
      updateHang(m_stalled);
      break;
    case Tab::Other:
      break;
  }
}

// The Graph tab's choices: rank 0's local graph (when recorded), then every pass of a
// distributed autograd context, by context. A live reload keeps the one shown.
void MainWindow::updateGraphChoices() {
  const int previous = m_graphChoice->count();
  const QSignalBlocker block(m_graphChoice);
  const QString current = m_graphChoice->currentText();
  m_graphChoice->clear();
  if (!m_run->graph.nodes.empty() || m_run->dist_graphs.empty())
    m_graphChoice->addItem(tr("rank 0 · iteration %1").arg(m_run->graph.iteration), -1);
  for (size_t i = 0; i < m_run->dist_graphs.size(); ++i)
    m_graphChoice->addItem(QString::fromStdString(describe_choice(m_run->dist_graphs[i])), static_cast<int>(i));
  const int keep = m_followTimeline ? m_graphChoice->findText(current) : -1;
  m_graphChoice->setCurrentIndex(std::max(0, keep));
  if (keep < 0 || previous == 0 || m_graph->shown().nodes.empty()) showChosenGraph();
}

void MainWindow::showChosenGraph() {
  if (!m_run) return;
  const int choice = m_graphChoice->currentData().isValid() ? m_graphChoice->currentData().toInt() : -1;
  if (choice < 0 || choice >= static_cast<int>(m_run->dist_graphs.size())) {
    m_graph->setGraph(m_run->graph);
  } else {
    // Read on demand: a run may hold many passes.
    try {
      probes::RunStoreReader* reader = m_fileWatch->reader();
      if (!reader) throw std::runtime_error(m_fileWatch->description().toStdString());
      const GraphChoice& c = m_run->dist_graphs[static_cast<size_t>(choice)];
      m_graph->setGraph(load_dist_graph(*reader, c.ctx_id, c.pass));
    } catch (const std::exception& e) {
      statusBar()->showMessage(tr("Could not read that graph: %1").arg(userMessage(e)));
      return;
    }
  }
  const QSignalBlocker g(m_graphCollapse);
  m_graphCollapse->setChecked(m_graph->collapsed());
}

namespace {

// The Summary's GPU time (README, "GPU time": HTA's definitions), per rank, and the
// stragglers by iteration.
QString gpuTimeHtml(const probes::GpuTimeBreakdown& gpu) {
  QString html = QObject::tr(
      "<h4>GPU time</h4><p>Kernels classed as Holistic Trace Analysis classes them: communication "
      "(NCCL), memory (copies, sets), computation (the rest); idle is the time between the first "
      "and last kernel when none ran; overlap is the share of communication that ran beside "
      "computation.</p>");
  html += QObject::tr(
      "<table cellpadding=4><tr><th>rank</th><th>kernels</th><th>span (ms)</th><th>computation (ms)</th>"
      "<th>communication (ms)</th><th>memory (ms)</th><th>idle (ms)</th><th>idle share</th>"
      "<th>overlap</th></tr>");
  for (const auto& r : gpu.ranks) {
    html += QStringLiteral(
                "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td>"
                "<td>%8</td><td>%9</td></tr>")
                .arg(r.rank)
                .arg(r.kernels)
                .arg(r.span_ms, 0, 'f', 3)
                .arg(r.computation_ms, 0, 'f', 3)
                .arg(r.communication_ms, 0, 'f', 3)
                .arg(r.memory_ms, 0, 'f', 3)
                .arg(r.idle_ms, 0, 'f', 3)
                .arg(r.span_ms > 0 ? QStringLiteral("%1%").arg(100 * r.idle_ms / r.span_ms, 0, 'f', 0)
                                   : QStringLiteral("–"))
                .arg(std::isnan(r.overlap_ratio) ? QStringLiteral("–") : QString::number(r.overlap_ratio, 'f', 2));
  }
  html += QStringLiteral("</table>");
  if (gpu.stragglers.empty()) {
    html += QObject::tr("<p>No straggler: in every iteration the ranks' GPU computation took about as long.</p>");
  } else {
    html += QObject::tr("<p><b>Stragglers</b> (the others wait for them in their NCCL kernels):</p><ul>");
    constexpr size_t kShown = 10;  // the first ones; `stats --json` lists every one
    for (size_t i = 0; i < std::min(kShown, gpu.stragglers.size()); ++i) {
      const auto& s = gpu.stragglers[i];
      html += QObject::tr("<li>iteration %1: rank %2 computed %3 ms, %4 ms more than the others' median</li>")
                  .arg(s.iteration)
                  .arg(s.rank)
                  .arg(s.computation_ms, 0, 'f', 3)
                  .arg(s.lag_ms, 0, 'f', 3);
    }
    if (gpu.stragglers.size() > kShown)
      html += QObject::tr("<li>and %1 more (ddpscope-cli stats RUN --json lists them all)</li>")
                  .arg(gpu.stragglers.size() - kShown);
    html += QStringLiteral("</ul>");
  }
  return html;
}

}  // namespace

void MainWindow::showSummary() {
  const RunData& d = *m_run;
  QString html =
      QStringLiteral(
          "<h3>%1</h3><p>status <b>%2</b>%3 · %4 ranks · %5 backend · "
          "model %6 · started %7</p>")
          .arg(QFileInfo(QString::fromStdString(d.path)).fileName().toHtmlEscaped(),
               QString::fromStdString(d.run.status).toHtmlEscaped(),
               d.run.message.empty() ? QString()
                                     : QStringLiteral(" (%1)").arg(
                                           QString::fromStdString(d.run.message).toHtmlEscaped()))
          .arg(d.run.world_size)
          .arg(QString::fromStdString(d.run.backend).toHtmlEscaped(),
               QString::fromStdString(d.run.model).toHtmlEscaped(),
               QString::fromStdString(d.run.created_at).toHtmlEscaped());
  if (!d.nonfinite.empty()) {
    html += QStringLiteral("<p style='color:#c62828'><b>%1</b></p>")
                .arg(QString::fromStdString(d.nonfinite).toHtmlEscaped());
  }
  if (!d.rejected.empty()) {
    html += QStringLiteral("<p style='color:#c62828'><b>%1</b></p>")
                .arg(QString::fromStdString(d.rejected).toHtmlEscaped());
  }
  html += QStringLiteral(
      "<table cellpadding=4><tr><th>rank</th><th>host</th><th>iterations</th>"
      "<th>mean iteration (ms)</th><th>comm (ms)</th><th>exposed (ms)</th>"
      "<th>overlap</th><th>events</th><th>dropped</th></tr>");
  for (const auto& r : d.ranks) {
    int n = 0;
    double iteration = 0, comm = 0, exposed = 0;
    for (const auto& it : d.analysis.iterations) {
      if (it.rank != r.rank || it.iteration <= 1) continue;  // skip warm-up
      ++n;
      iteration += it.iteration_ms;
      comm += it.comm_ms;
      exposed += it.exposed_comm_ms;
    }
    const QString overlap =
        comm > 0 ? QString::number(1 - exposed / comm, 'f', 2) : QStringLiteral("–");
    html += QStringLiteral(
                "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td>"
                "<td>%7</td><td>%8</td><td>%9</td></tr>")
                .arg(r.rank)
                .arg(QString::fromStdString(r.host).toHtmlEscaped())
                .arg(n)
                .arg(n ? iteration / n : 0, 0, 'f', 3)
                .arg(n ? comm / n : 0, 0, 'f', 3)
                .arg(n ? exposed / n : 0, 0, 'f', 3)
                .arg(overlap)
                .arg(r.events_received)
                .arg(r.events_dropped);
  }
  html += QStringLiteral("</table>");
  if (!d.gpu.empty()) html += gpuTimeHtml(d.gpu);
  m_summary->setText(html);
}

void MainWindow::updateOverlap() {
  if (!m_run) return;
  const int rank = m_overlapRank->currentData().toInt();
  m_overlap->setRun(m_run.get(), rank);
  std::set<int64_t> straggling;
  for (const auto& s : probes::find_stragglers(m_run->analysis)) {
    if (s.rank == rank) straggling.insert(s.iteration);
  }
  // Stacked per iteration: compute, communication hidden behind it, exposed communication.
  auto* compute = new QBarSet(tr("compute"));
  // Straggler iterations are drawn as selected compute bars; this empty set only gives
  // their colour a legend entry.
  auto* stragglerKey = new QBarSet(tr("compute, straggler iteration"));
  auto* hidden = new QBarSet(tr("overlapped comm"));
  auto* exposed = new QBarSet(tr("exposed comm"));
  const QColor straggler(0xf2, 0x8e, 0x2b);
  double top = 0;
  // Bars for at most the latest kMaxBars iterations: more are unreadable (and slow to
  // lay out); the table below keeps every iteration.
  constexpr int kMaxBars = 300;
  std::vector<const probes::IterationAnalysis*> shown;
  for (const auto& it : m_run->analysis.iterations) {
    if (it.rank == rank) shown.push_back(&it);
  }
  const size_t total = shown.size();
  if (shown.size() > kMaxBars) shown.erase(shown.begin(), shown.end() - kMaxBars);
  QVector<int64_t> numbers;
  for (const probes::IterationAnalysis* p : shown) {
    const auto& it = *p;
    *compute << it.compute_ms;
    *stragglerKey << 0;
    *hidden << it.comm_ms - it.exposed_comm_ms;
    *exposed << it.exposed_comm_ms;
    numbers << it.iteration;
    top = std::max(top, it.compute_ms + it.comm_ms);
  }
  auto* series = new QStackedBarSeries;
  series->append(compute);
  series->append(stragglerKey);
  series->append(hidden);
  series->append(exposed);
  series->setBarWidth(0.9);
  auto* chart = new QChart;
  applyChartTheme(chart, palette());
  chart->addSeries(series);
  // Colours after the series joined the themed chart (the theme sets its own).
  compute->setColor(kindColor(probes::Kind::Forward));
  compute->setSelectedColor(straggler);
  stragglerKey->setColor(straggler);
  hidden->setColor(kindColor(probes::Kind::Allreduce));
  exposed->setColor(QColor(0xd6, 0x27, 0x28));
  for (int i = 0; i < numbers.size(); ++i) {
    if (straggling.count(numbers[i])) compute->selectBar(i);
  }
  chart->setTitle(tr("Rank %1: compute and communication per iteration%2 (straggler in %3 of %4) · click a bar "
                     "to see that iteration in the timeline")
                      .arg(rank)
                      .arg(total > shown.size() ? tr(", the last %1").arg(shown.size()) : QString())
                      .arg(straggling.size())
                      .arg(total));
  // Iteration numbers under the bars: each bar's while they fit, else every k-th (a
  // 1-2-5 step), placed on its bar.
  QAbstractAxis* xAxis = nullptr;
  const int n = static_cast<int>(numbers.size());
  if (n <= 40) {
    auto* x = new QBarCategoryAxis;
    for (int64_t it : numbers) x->append(QString::number(it));
    xAxis = x;
  } else {
    auto* x = new QCategoryAxis;
    x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    x->setRange(-0.5, n - 0.5);
    int step = 1;
    for (int m = 0; step * 20 < n; ++m) step = (m % 3 == 0 ? 2 : m % 3 == 1 ? 5 : 10) * static_cast<int>(std::pow(10, m / 3));
    for (int i = 0; i < n; ++i) {
      if (numbers[i] % step == 0) x->append(QString::number(numbers[i]), i);
    }
    xAxis = x;
  }
  xAxis->setTitleText(tr("iteration"));
  auto* y = new QValueAxis;
  y->setRange(0, top * 1.05 + 1e-6);
  y->applyNiceNumbers();
  y->setTitleText(tr("ms"));
  chart->addAxis(xAxis, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(xAxis);
  series->attachAxis(y);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setAnimationOptions(QChart::NoAnimation);
  connect(series, &QAbstractBarSeries::clicked, this, [this, numbers](int index, QBarSet*) {
    if (index >= 0 && index < numbers.size()) showIterationInTimeline(numbers[index]);
  });
  QChart* old = m_overlapChart->chart();
  m_overlapChart->setChart(chart);
  delete old;
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

void MainWindow::updateBuckets() {
  if (!m_run) return;
  const int rank = m_bucketRank->currentData().toInt();
  m_buckets->setRun(m_run.get(), rank, m_bucketIteration->value());
  m_params->setRun(m_run.get(), rank);
  std::set<int> before, after;
  for (const auto& b : m_run->buckets) {
    if (b.rank == rank) (b.generation == 0 ? before : after).insert(b.bucket);
  }
  m_bucketAdvice->setRun(m_run->path, m_run->span_count, rank, m_fileWatch->reader());
  m_rebuildNote->setText(after.empty()
                             ? tr("buckets: %1 (not rebuilt yet)").arg(before.size())
                             : tr("buckets: %1 before the rebuild, %2 after (from the observed "
                                  "gradient-ready order)")
                                   .arg(before.size())
                                   .arg(after.size()));
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
    case RunFileWatch::State::Deleted:
      showBanner(m_fileWatch->description(), false, true);
      break;
    case RunFileWatch::State::Replaced:
      showBanner(m_fileWatch->description(), true, m_fileWatch->reader() != nullptr);
      break;
    default:
      break;
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

}  // namespace ddpscope::gui
