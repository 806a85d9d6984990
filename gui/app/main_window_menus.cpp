// MainWindow: the File, View and Help menus (Run: main_window_jobs.cpp; Learn:
// main_window_learn.cpp).
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>

#include "main_window.h"
#include "run_list_model.h"
#include "run_list_panel.h"
#include "run_tabs.h"
#include "shortcuts_dialog.h"
#include "timeline_page.h"
#include "timeline_view.h"

namespace ddpscope::gui {

void MainWindow::buildFileMenu() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open run or traces..."), QKeySequence::Open, this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Open a run, or a PyTorch job's profiler traces (one per rank)"), m_session->workspace(),
        tr("Runs and PyTorch traces (*.ddprun *.json *.json.gz);;Run files (*.ddprun);;"
           "PyTorch profiler traces (*.json *.json.gz);;All files (*)"));
    if (paths.size() == 1) openPath(paths.first(), /*background=*/true);
    if (paths.size() > 1) importTraces(paths);  // one trace per rank
  });
  file->addAction(tr("Open PyTorch &traces folder..."), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("A folder of a PyTorch job's profiler traces (one per rank)"), m_session->workspace());
    if (!dir.isEmpty()) importTraces({dir});
  });
  file->addAction(tr("Co&mpare with another run..."), this, [this] {
    // Beside the open run: the run to compare with is most often its neighbour.
    const auto& run = m_session->run();
    const QString folder = run ? QFileInfo(QString::fromStdString(run->path)).absolutePath() : m_session->workspace();
    const QString other =
        QFileDialog::getOpenFileName(this, tr("Compare the open run with"), folder, tr("Run files (*.ddprun)"));
    if (!other.isEmpty()) compareWith(other);
  });
  file->addAction(tr("&Refresh runs"), QKeySequence::Refresh, m_runList->runs(), &RunListModel::refresh);
  file->addAction(tr("&Save a copy of the run..."), QKeySequence::SaveAs, this, [this] {
    if (!m_session->run()) return;
    const QString out = QFileDialog::getSaveFileName(this, tr("Save a copy of the run"), m_session->workspace(),
                                                     tr("Run files (*.ddprun)"));
    if (!out.isEmpty()) saveRunCopy(out);
  });
  file->addSeparator();
  file->addAction(tr("Export &Chrome trace..."), this, [this] {
    const auto& run = m_session->run();
    if (!run) return;
    const QString out = QFileDialog::getSaveFileName(this, tr("Export Chrome trace"),
                                                     QString::fromStdString(run->path) + ".json", tr("Trace (*.json)"));
    if (!out.isEmpty()) m_session->exportChromeTrace(out);
  });
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
    QSettings().setValue(QStringLiteral("layout/runList"), on);
    m_runList->setAskedFor(on);  // the user's choice: shown even while empty
  });
  connect(m_runListAction, &QAction::toggled, m_runList, &RunListPanel::setWanted);
  m_runList->setWanted(m_runListAction->isChecked());
  view->addSeparator();
  TimelinePage* timeline = part<TimelinePage>();
  view->addAction(tr("Timeline: fit the run (F)"), this, [this, timeline] {
    showTab(QStringLiteral("timeline"));
    timeline->view()->fitAll();
  });
  view->addAction(tr("Timeline: find... (Ctrl+F, /)"), this, [this, timeline] {
    showTab(QStringLiteral("timeline"));
    timeline->showSearch();
  });
  view->addAction(tr("Timeline: collapse every rank"), this, [timeline] {
    for (const auto& lane : timeline->view()->data().lanes)
      timeline->view()->setRankCollapsed(lane.rank, true);
  });
  view->addAction(tr("Timeline: expand every rank"), this, [timeline] {
    for (const auto& lane : timeline->view()->data().lanes)
      timeline->view()->setRankCollapsed(lane.rank, false);
  });
}

void MainWindow::buildHelpMenu() {
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keyboard shortcuts"), QKeySequence::HelpContents, this,
                  [this] {
                    ShortcutsDialog dialog(this);
                    dialog.exec();
                  })
      ->setObjectName(QStringLiteral("shortcutsAction"));
  help->addAction(tr("&About ddpscope"), this, [this] {
    QMessageBox::about(this, tr("About ddpscope"),
                       tr("<b>ddpscope</b>: a distributed-training engine (DistributedDataParallel and "
                          "distributed autograd over RPC, on OpenMPI and NCCL) with this visual debugger.<br><br>"
                          "Runs are SQLite files written by the engine's probes; every view reads them "
                          "through the run store. See README.md for the two set-up commands and docs/ for the CLI "
                          "(ddpscope-cli train, stats, hang, export), every view and the lessons."));
  });
}

}  // namespace ddpscope::gui
