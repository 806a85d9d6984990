#include "main_window.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QProgressBar>
#include <QProgressDialog>
#include <QSplitter>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>

#include "classroom_controller.h"
#include "collect_dialog.h"
#include "error_banner.h"
#include "learn_page.h"
#include "run_file_watch.h"
#include "run_list_model.h"
#include "run_list_panel.h"
#include "run_tabs.h"
#include "splitter_memory.h"
#include "window_fit.h"

namespace ddpscope::gui {

namespace {

// A run file's load (busy, in the status bar) and an import of traces (a dialog that can
// cancel), as the session reports them.
void showProgress(MainWindow* window, RunSession* session, RunListModel* runs) {
  auto* opening = new QProgressBar;  // busy: a run file's load has no count to show
  opening->setObjectName(QStringLiteral("openProgress"));
  opening->setRange(0, 0);
  opening->setMaximumWidth(160);
  opening->hide();
  window->statusBar()->addPermanentWidget(opening);
  QObject::connect(session, &RunSession::openStarted, opening, &QWidget::show);
  QObject::connect(session, &RunSession::openEnded, opening, &QWidget::hide);
  // Traces imported off the UI thread: a progress dialog that can cancel, made on the
  // first import (a progress dialog shows itself once its minimum duration has passed).
  const auto importing = [window, session] {
    auto* dialog = window->findChild<QProgressDialog*>(QStringLiteral("importProgress"));
    if (dialog) return dialog;
    dialog = new QProgressDialog(window);
    dialog->setObjectName(QStringLiteral("importProgress"));
    dialog->setWindowTitle(MainWindow::tr("Importing PyTorch traces"));
    dialog->setRange(0, 1000);
    dialog->setMinimumDuration(300);  // small jobs finish before it shows
    dialog->setAutoClose(false);
    dialog->setAutoReset(false);
    dialog->setMinimumWidth(460);
    QObject::connect(dialog, &QProgressDialog::canceled, session, &RunSession::cancelImport);
    return dialog;
  };
  QObject::connect(session, &RunSession::importStarted, window, [importing](const QString& out) {
    importing()->setLabelText(MainWindow::tr("Importing PyTorch traces into %1").arg(QFileInfo(out).fileName()));
    importing()->setValue(0);
  });
  QObject::connect(session, &RunSession::importProgress, window, [importing](double fraction, const QString& what) {
    importing()->setValue(static_cast<int>(fraction * 1000));
    importing()->setLabelText(MainWindow::tr("Importing PyTorch traces: %1").arg(what));
  });
  QObject::connect(session, &RunSession::importEnded, window, [importing, runs] {
    importing()->reset();
    importing()->hide();
    runs->refresh();
  });
}

}  // namespace

MainWindow::MainWindow(const QString& workspaceFolder, QWidget* parent)
    : QMainWindow(parent), m_session(new RunSession(workspaceFolder, this)) {
  setWindowTitle(QStringLiteral("ddpscope"));
  auto* splitter = new QSplitter(this);
  splitter->setObjectName(QStringLiteral("mainSplitter"));  // names: MainWindow::part
  m_runList = new RunListPanel(m_session, splitter);
  auto* right = new QWidget(splitter);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  m_banner = new ErrorBanner(right);
  m_tabs = new RunTabs(m_session, right);
  rightLayout->addWidget(m_banner);
  rightLayout->addWidget(m_tabs, 1);
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setChildrenCollapsible(false);
  splitter->setSizes({250, 1030});  // the list a fifth of a laptop's window, the rest the run's
  setCentralWidget(splitter);
  buildPages();
  rememberSplitters(splitter, QStringLiteral("main"));
  // The classroom beside the Learn page: its status line is the window's to place.
  m_classroom = new ClassroomController(m_learn, this);
  statusBar()->addPermanentWidget(m_classroom->statusLabel());
  connect(m_classroom, &ClassroomController::statusMessage, this,
          [this](const QString& text) { statusBar()->showMessage(text); });
  connect(m_classroom, &ClassroomController::failed, this, &MainWindow::loadFailed);
  connect(m_classroom, &ClassroomController::showPage, this, [this] { showTab(QStringLiteral("learn")); });
  buildFileMenu();
  buildRunMenu();
  buildViewMenu();
  buildLearnMenu();
  buildHelpMenu();
  answerSession();
  setAcceptDrops(true);
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
  m_session->disconnect(this);
  m_classroom->end();  // before the status bar it reports to goes
  delete m_session;    // stops a running job: no rank outlives the app
}

void MainWindow::answerSession() {
  connect(this, &MainWindow::loadFailed, this, [this](const QString& message) {
    statusBar()->showMessage(message);
    m_banner->showMessage(message);
  });
  connect(m_session, &RunSession::failed, this, &MainWindow::loadFailed);
  connect(m_session, &RunSession::statusMessage, this,
          [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); });
  connect(m_session, &RunSession::runChanged, this, [this](bool live) {
    const auto& run = m_session->run();
    setWindowTitle(QStringLiteral("ddpscope — %1%2")
                       .arg(QFileInfo(QString::fromStdString(run->path)).fileName(),
                            live && m_session->job()->isActive() ? tr(" (live)") : QString()));
    emit runShown();
  });
  connect(m_session, &RunSession::runOpened, m_banner, &ErrorBanner::clear);  // an earlier error no longer applies
  connect(m_session, &RunSession::followingStarted, m_banner, &ErrorBanner::clear);
  connect(m_session, &RunSession::followingStarted, this, [this] { showTab(QStringLiteral("live")); });
  connect(m_session, &RunSession::stalled, this, [this] { showTab(QStringLiteral("hang")); });
  connect(m_session, &RunSession::flightDumpsImported, this, [this] { showTab(QStringLiteral("hang")); });
  connect(m_session, &RunSession::importReused, this, &MainWindow::importReused);
  connect(m_session, &RunSession::jobFinished, this, [this](JobController::State state) {
    if (const auto& run = m_session->run())  // the title follows the job: no longer "(live)"
      setWindowTitle(QStringLiteral("ddpscope — %1").arg(QFileInfo(QString::fromStdString(run->path)).fileName()));
    m_runList->runs()->refresh();
    if (state == JobController::State::Failed) showTab(QStringLiteral("hang"));
  });
  // The run file on screen deleted or replaced on disk: said in the banner, with a way out.
  RunFileWatch* watch = m_session->fileWatch();
  connect(watch, &RunFileWatch::stateChanged, this, [this, watch] {
    if (watch->state() == RunFileWatch::State::Deleted) m_banner->showMessage(watch->description(), false, true);
    if (watch->state() == RunFileWatch::State::Replaced)
      m_banner->showMessage(watch->description(), true, watch->reader() != nullptr);
    if (watch->state() != RunFileWatch::State::Intact) statusBar()->showMessage(watch->description());
  });
  connect(m_banner, &ErrorBanner::reloadRequested, this, [this] {
    if (m_session->run()) openRun(QString::fromStdString(m_session->run()->path));
  });
  connect(m_banner, &ErrorBanner::saveCopyRequested, this, [this] {
    const QString out = QFileDialog::getSaveFileName(this, tr("Save a copy of the run"), m_session->workspace(),
                                                     tr("Run files (*.ddprun)"));
    if (!out.isEmpty()) saveRunCopy(out);
  });
  showProgress(this, m_session, m_runList->runs());
}

bool MainWindow::saveRunCopy(const QString& path) {
  if (!m_session->saveRunCopy(path)) return false;
  m_runList->runs()->refresh();
  return true;
}

void MainWindow::showTab(const QString& id) { m_tabs->showTab(id); }

int MainWindow::tabIndex(const QString& id) const { return m_tabs->tabIndex(id); }

bool MainWindow::tabIsEmpty(const QString& id) const { return m_tabs->tabIsEmpty(id); }

void MainWindow::setRunListShown(bool shown) { m_runListAction->setChecked(shown); }

bool MainWindow::runListShown() const { return m_runList->isVisibleTo(this); }

}  // namespace ddpscope::gui
