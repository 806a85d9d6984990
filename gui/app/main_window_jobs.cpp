// MainWindow's job side: the Run menu (launch, collect, follow, stop), its dialogs, and
// the exports of the view on screen (PNG of the tab, CSV of its table).
#include <QCoreApplication>
#include <QDir>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QStatusBar>
#include <QTableView>

#include "buckets_page.h"
#include "collect_dialog.h"
#include "csv_export.h"
#include "hang_view.h"
#include "job_ranks.h"
#include "launch_dialog.h"
#include "main_window.h"
#include "overlap_page.h"
#include "run_tabs.h"

namespace ddpscope::gui {

void MainWindow::buildRunMenu() {
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(tr("&Launch job..."), QKeySequence(tr("Ctrl+L")), this, &MainWindow::showLaunchDialog);
  run->addAction(tr("&Collect from a job..."), this, &MainWindow::showCollectDialog)
      ->setObjectName(QStringLiteral("collectAction"));
  QAction* follow = run->addAction(tr("&Follow job"), m_session, &RunSession::followJob);
  QAction* stop = run->addAction(tr("&Stop job"), m_session, &RunSession::stopJob);
  follow->setObjectName(QStringLiteral("followAction"));
  stop->setObjectName(QStringLiteral("stopAction"));
  // Only with a job running: without one, both would do nothing, silently.
  const auto enable = [this, follow, stop] {
    follow->setEnabled(m_session->job()->isActive());
    stop->setEnabled(m_session->job()->isActive());
  };
  enable();
  connect(m_session, &RunSession::followingStarted, this, enable);
  connect(m_session, &RunSession::jobFinished, this, enable);
  // A collector's words reach its dialog, and so do its run's reloads: who joined and ended.
  JobController* job = m_session->job();
  connect(job, &JobController::collecting, this, [this](const QStringList& exports, const QString& prefix) {
    if (m_collectDialog) m_collectDialog->showInstructions(exports, prefix);
  });
  connect(job, &JobController::ranksChanged, this, [this](int joined, int ended) {
    if (m_collectDialog) m_collectDialog->setCounts(joined, ended);
  });
  connect(m_session, &RunSession::collectedRanks, this, [this](const RunData& collected) {
    if (m_collectDialog) m_collectDialog->setRanks(jobRanks(collected));
  });
  connect(m_session, &RunSession::jobFinished, this, [this](JobController::State state, const QString& message) {
    if (m_collectDialog && m_collectDialog->isCollecting())
      m_collectDialog->setEnded(state == JobController::State::Failed ? message : QString());
  });
}

void MainWindow::showLaunchDialog() {
  LaunchDialog dialog(this);
  // --check writes nothing: any path not holding a run will do.
  const QString placeholder =
      QDir::temp().filePath(QStringLiteral("ddpscope-launch-check-%1.ddprun").arg(QCoreApplication::applicationPid()));
  dialog.setLaunchCheck(
      [this, placeholder](const LaunchConfig& c) { return m_session->job()->checkArguments(c, placeholder); });
  if (dialog.exec() != QDialog::Accepted) return;
  QString error;
  if (!launchJob(dialog.config(), &error)) emit loadFailed(tr("Cannot launch: %1").arg(error));
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
      if (!m_session->startCollecting(listen, expect, &error)) m_collectDialog->showError(error);
    });
    connect(m_collectDialog, &CollectDialog::stopRequested, m_session, &RunSession::stopJob);
  }
  m_collectDialog->show();
  m_collectDialog->raise();
  m_collectDialog->activateWindow();
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
  for (QTableView* t : {part<OverlapPage>()->table(), part<BucketsPage>()->bucketTable(),
                        part<BucketsPage>()->parameterTable(), static_cast<QTableView*>(part<HangView>()->table())}) {
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
