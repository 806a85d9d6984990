// MainWindow's job side: launching, following live, stopping, the hang view, and the
// exports (Chrome trace, PNG of the view, CSV of a table).
#include <QCoreApplication>
#include <QLabel>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>

#include "chrome_trace_export.h"
#include "user_message.h"
#include "csv_export.h"
#include "hang_view.h"
#include "launch_dialog.h"
#include "live_monitor.h"
#include "live_run_loader.h"
#include "main_window.h"

#include "buckets_page.h"
#include "overlap_page.h"
#include "run_file_watch.h"
#include "run_list_model.h"
#include "run_workspace.h"
#include "plural.h"

namespace ddpscope::gui {

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

bool MainWindow::launchJob(const LaunchConfig& config, QString* error) {
  QString path;
  try {
    const QString folder = m_runList->folder();
    path = folder.isEmpty()
               ? QString::fromStdString(probes::new_run_path())
               : QDir(folder).filePath(QFileInfo(QString::fromStdString(probes::new_run_path())).fileName());
  } catch (const std::exception& e) {
    *error = userMessage(e);
    return false;
  }
  if (!m_job->start(config, path, error)) return false;
  m_errorBanner->hide();  // an earlier refusal no longer applies
  updateJobActions();
  m_liveRun = config.probes ? path : QString();
  m_following = !m_liveRun.isEmpty();
  m_stalled = false;
  m_monitor->clear();
  m_monitor->setStatus(tr("starting %1 (%2)...").arg(countOf(config.worldSize, tr("rank"))).arg(config.backend), true);
  if (!m_liveRun.isEmpty()) m_live->watch(m_liveRun, 250, m_stallMs);
  showTab(QStringLiteral("live"));
  statusBar()->showMessage(tr("Launched: %1").arg(path));
  return true;
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
  if (m_run) {                      // the title follows the job: no longer "(live)"
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

void MainWindow::updateHang(bool stalled) {
  if (!m_run) return;
  const auto& report = m_run->hang;
  QString headline;
  bool alarm = false;
  if (stalled) {
    headline = tr("No progress for %1 s: the job looks hung. %2Where each rank stands:")
                   .arg((report.now_ns - report.latest_event_ns) / 1e9, 0, 'f', 0)
                   .arg(report.verdict.empty() ? QString() : QString::fromStdString(report.verdict) + QLatin1Char(' '));
    alarm = true;
  } else if (m_run->run.status == "failed" && !report.verdict.empty()) {
    // The culprit first (who never arrived, or died), then who reported it: the same
    // words as `ddpscope-cli hang`.
    headline = tr("%1 Where each rank stood at the end:").arg(QString::fromStdString(report.verdict));
    alarm = true;
  } else if (m_run->run.status == "failed") {
    headline = tr("The run failed%1: %2. Where each rank stood at the end:")
                   .arg(m_run->run.failed_rank >= 0 ? tr(" on rank %1").arg(m_run->run.failed_rank) : QString(),
                        QString::fromStdString(m_run->run.message));
    alarm = true;
  } else if (m_job->isActive() && m_following) {
    headline = tr("The job is making progress. Each rank's latest position:");
  } else {
    headline = tr("Run %1. Where each rank stood at its last event:").arg(QString::fromStdString(m_run->run.status));
  }
  m_hang->setReport(report, headline, alarm);
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
