// MainWindow's job side: launching, following live, stopping, the hang view, and the
// exports (Chrome trace, PNG of the view, CSV of a table).
#include <QCoreApplication>
#include <set>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>

#include "chrome_trace_export.h"
#include "collect_dialog.h"
#include "job_ranks.h"
#include "user_message.h"
#include "csv_export.h"
#include "hang_view.h"
#include "launch_dialog.h"
#include "live_monitor.h"
#include "live_run_loader.h"
#include "main_window.h"
#include "slow_cause_text.h"

#include "buckets_page.h"
#include "overlap_page.h"
#include "run_file_watch.h"
#include "run_list_model.h"
#include "run_workspace.h"
#include "plural.h"

namespace ddpscope::gui {

void MainWindow::buildRunMenu() {
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(tr("&Launch job..."), QKeySequence(tr("Ctrl+L")), this, &MainWindow::showLaunchDialog);
  run->addAction(tr("&Collect from a job..."), this, &MainWindow::showCollectDialog)
      ->setObjectName(QStringLiteral("collectAction"));
  m_followAction = run->addAction(tr("&Follow job"), this, &MainWindow::followJob);
  m_stopAction = run->addAction(tr("&Stop job"), this, &MainWindow::stopJob);
  m_followAction->setObjectName(QStringLiteral("followAction"));
  m_stopAction->setObjectName(QStringLiteral("stopAction"));
  updateJobActions();
  connect(m_job, &JobController::finished, this, &MainWindow::updateJobActions);
  // A collector's words reach its dialog; its run's reloads say who joined.
  connect(m_job, &JobController::collecting, this, [this](const QStringList& exports, const QString& prefix) {
    if (m_collectDialog) m_collectDialog->showInstructions(exports, prefix);
  });
  connect(m_job, &JobController::ranksChanged, this, [this](int joined, int ended) {
    if (m_collectDialog) m_collectDialog->setCounts(joined, ended);
  });
  connect(m_live, &LiveRunLoader::loaded, this, [this](std::shared_ptr<const RunData> run) {
    if (!m_following || QString::fromStdString(run->path) != m_liveRun) return;
    // The Collect dialog's rank table follows its run to the end: the reload after the
    // collector ended is the one that has every rank's host and outcome.
    if (m_collectDialog && m_job->lastWasCollection()) m_collectDialog->setRanks(jobRanks(*run));
    if (m_followingFile || m_job->isCollecting()) onCollectedRunLoaded(*run);
  });
}

void MainWindow::showLaunchDialog() {
  LaunchDialog dialog(this);
  // --check writes nothing: any path not holding a run will do.
  const QString placeholder =
      QDir::temp().filePath(QStringLiteral("ddpscope-launch-check-%1.ddprun").arg(QCoreApplication::applicationPid()));
  dialog.setLaunchCheck([this, placeholder](const LaunchConfig& c) { return m_job->checkArguments(c, placeholder); });
  if (dialog.exec() != QDialog::Accepted) return;
  QString error;
  if (!launchJob(dialog.config(), &error)) emit loadFailed(tr("Cannot launch: %1").arg(error));
}

QString MainWindow::newRunFile(QString* error) const {
  try {
    const QString folder = m_runList->folder();
    const QString path = QString::fromStdString(probes::new_run_path());
    return folder.isEmpty() ? path : QDir(folder).filePath(QFileInfo(path).fileName());
  } catch (const std::exception& e) {
    *error = userMessage(e);
    return {};
  }
}

void MainWindow::beginFollowing(const QString& path, const QString& status) {
  m_errorBanner->hide();  // an earlier refusal no longer applies
  updateJobActions();
  m_liveRun = path;
  m_following = !m_liveRun.isEmpty();
  m_stalled = false;
  m_monitor->clear();
  m_monitor->setStatus(status, true);
  if (m_job->isCollecting() || m_followingFile) m_monitor->setUnbounded();  // no iteration count is known
  if (!m_liveRun.isEmpty()) m_live->watch(m_liveRun, 250, m_stallMs);
  showTab(QStringLiteral("live"));
}

bool MainWindow::launchJob(const LaunchConfig& config, QString* error) {
  const QString path = newRunFile(error);
  if (path.isEmpty() || !m_job->start(config, path, error)) return false;
  m_followingFile = false;
  beginFollowing(config.probes ? path : QString(),
                 tr("starting %1 (%2)...").arg(countOf(config.worldSize, tr("rank"))).arg(config.backend));
  statusBar()->showMessage(tr("Launched: %1").arg(path));
  return true;
}

void MainWindow::showCollectDialog() {
  if (m_collectDialog && !m_collectDialog->isCollecting() && !m_collectDialog->startButton()->isEnabled()) {
    m_collectDialog->deleteLater();  // its collection ended: a new one starts afresh
    m_collectDialog = nullptr;
  }
  if (!m_collectDialog) {
    m_collectDialog = new CollectDialog(this);
    connect(m_collectDialog, &CollectDialog::startRequested, this, [this](const QString& listen, int expect) {
      QString error;
      if (!startCollecting(listen, expect, &error)) m_collectDialog->showError(error);
    });
    connect(m_collectDialog, &CollectDialog::stopRequested, this, &MainWindow::stopJob);
  }
  m_collectDialog->show();
  m_collectDialog->raise();
  m_collectDialog->activateWindow();
}

bool MainWindow::startCollecting(const QString& listen, int expect, QString* error) {
  const QString path = newRunFile(error);
  if (path.isEmpty() || !m_job->startCollect(path, listen, expect, error)) return false;
  m_followingFile = false;
  beginFollowing(path, tr("collecting: waiting for the job's ranks (see Run > Collect from a job...)"));
  m_live->setStallAllowed(false);  // no rank yet: quiet is not a hang
  statusBar()->showMessage(tr("Collecting into %1").arg(path));
  return true;
}

bool MainWindow::followRunFile(const QString& path, QString* error) {
  if (m_job->isActive()) {
    *error = tr("a job is running in this window; open the run in another one");
    return false;
  }
  if (!QFileInfo(path).isFile()) {
    *error = tr("%1 does not exist (yet): start the collector first").arg(path);
    return false;
  }
  m_followingFile = true;
  const QString status = tr("following %1 as it grows").arg(QFileInfo(path).fileName());
  beginFollowing(path, status);
  m_monitor->setStatus(status, false);  // its collector is another's: nothing here to stop
  m_monitor->setUnbounded();
  m_live->setStallAllowed(false);
  statusBar()->showMessage(tr("Following %1").arg(path));
  return true;
}

// A live reload of a run written by a collector (ours or another's): who has joined, and
// whether a quiet file now means a hang (some rank came and not every one has ended).
void MainWindow::onCollectedRunLoaded(const RunData& run) {
  int joined = 0, ended = 0, events = 0;
  for (const auto& r : run.ranks) {
    ++joined;
    events += r.events_received > 0;
  }
  std::set<int> finished;
  for (const auto& a : run.attendance.attempts)
    if (!a.outcome.empty()) finished.insert(a.rank);
  for (const auto& a : run.attendance.attempts)
    if (a.outcome.empty()) finished.erase(a.rank);  // a later attempt of it still runs
  ended = static_cast<int>(finished.size());
  m_live->setStallAllowed(events > 0 && ended < joined);
  if (m_followingFile && run.run.status != "running") {  // its collector ended it: one last reload
    m_followingFile = false;
    m_live->stop();
    m_monitor->setStatus(tr("the run is %1").arg(QString::fromStdString(run.run.status)), false);
  } else if (m_followingFile || m_job->isCollecting()) {
    int64_t iteration = 0;
    for (const auto& it : run.analysis.iterations)
      iteration = std::max(iteration, it.iteration);
    m_monitor->setStatus(tr("collecting: %1 joined, %2 ended%3")
                             .arg(countOf(joined, tr("rank")))
                             .arg(ended)
                             .arg(iteration > 0 ? tr(" · iteration %1").arg(iteration) : QString()),
                         m_job->isCollecting());
  }
}

void MainWindow::followJob() {
  if (!m_job->isActive() || m_liveRun.isEmpty()) {
    statusBar()->showMessage(tr("No job with a run file is running"));
    return;
  }
  openRun(m_liveRun);
}

void MainWindow::stopJob() {
  if (!m_job->isActive()) return;
  m_monitor->setStatus(tr("stopping: every rank got SIGTERM (killed in 10 s if still running)"), false);
  m_job->stop();
}

void MainWindow::onJobFinished(JobController::State state, const QString& message) {
  if (m_following) m_live->stop();  // one last reload shows the final state
  if (m_collectDialog && m_collectDialog->isCollecting())
    m_collectDialog->setEnded(state == JobController::State::Failed ? message : QString());
  if (m_run) {  // the title follows the job: no longer "(live)"
    setWindowTitle(QStringLiteral("ddpscope — %1").arg(QFileInfo(QString::fromStdString(m_run->path)).fileName()));
  }
  m_runList->refresh();
  switch (state) {
    case JobController::State::Finished:
      m_monitor->setStatus(tr("finished in %1 s").arg(m_job->elapsedMs() / 1000.0, 0, 'f', 1), false);
      break;
    case JobController::State::Stopped: m_monitor->setStatus(tr("stopped"), false); break;
    default:
      m_monitor->setStatus(tr("failed: %1").arg(message), false);
      statusBar()->showMessage(tr("The job failed: %1").arg(message));
      showTab(QStringLiteral("hang"));
      break;
  }
}

void MainWindow::exportChromeTrace() {
  if (!m_run) return;
  const QString out = QFileDialog::getSaveFileName(this, tr("Export Chrome trace"),
                                                   QString::fromStdString(m_run->path) + ".json", tr("Trace (*.json)"));
  if (out.isEmpty()) return;
  try {
    // The run on screen, read through the kept connection: still there when the file
    // was deleted, and never another run written over it.
    probes::RunStoreReader* reader = m_fileWatch->reader();
    if (!reader) throw std::runtime_error(m_fileWatch->description().toStdString());
    const int64_t n = probes::export_chrome_trace(*reader, out.toStdString());
    statusBar()->showMessage(tr("Wrote %1 trace events to %2").arg(n).arg(out));
  } catch (const std::exception& e) {
    emit loadFailed(tr("Export failed: %1").arg(userMessage(e)));
  }
}

bool MainWindow::exportViewPng(const QString& path) {
  QWidget* page = m_tabs->currentWidget();
  if (!page || !page->grab().save(path, "PNG")) {
    emit loadFailed(tr("Cannot write the image %1").arg(path));
    return false;
  }
  statusBar()->showMessage(tr("Saved %1").arg(path));
  return true;
}

bool MainWindow::exportTableCsv(const QString& path) {
  // The table of the current tab: the one last clicked, else its main table (the
  // Buckets tab: the bucket table, then the parameter map).
  QWidget* page = m_tabs->currentWidget();
  const QAbstractItemModel* model = nullptr;
  for (QTableView* t : {m_overlapPage->table(), m_bucketPage->bucketTable(), m_bucketPage->parameterTable(),
                        static_cast<QTableView*>(m_hang->table())}) {
    if (!page || !page->isAncestorOf(t)) continue;
    if (!model || t->hasFocus()) model = t->model();
  }
  if (!model) {
    emit loadFailed(tr("The %1 tab has no table to export").arg(m_tabs->tabText(m_tabs->currentIndex())));
    return false;
  }
  QString error;
  if (!writeCsv(*model, path, &error)) {
    emit loadFailed(error);
    return false;
  }
  statusBar()->showMessage(tr("Saved %1 rows to %2").arg(model->rowCount()).arg(path));
  return true;
}

}  // namespace ddpscope::gui
