// MainWindow: opening a PyTorch job's profiler traces (File > Open, drag and drop, the
// command line): converted into a run in the workspace off the UI thread, with a
// progress dialog that can cancel, then opened like any run.
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMimeData>
#include <QProgressDialog>
#include <QStatusBar>

#include "flight_import.h"
#include "main_window.h"

#include "ddpscope/regular_file.h"
#include "run_list_model.h"
#include "trace_import_job.h"
#include "user_message.h"
#include "plural.h"

namespace ddpscope::gui {

void MainWindow::setUpTraceImport() {
  m_import = new TraceImportJob(this);
  connect(m_import, &TraceImportJob::progress, this, [this](double fraction, const QString& what) {
    if (!m_importProgress) return;
    m_importProgress->setValue(static_cast<int>(fraction * 1000));
    m_importProgress->setLabelText(tr("Importing PyTorch traces: %1").arg(what));
  });
  connect(m_import, &TraceImportJob::finished, this, &MainWindow::onImportFinished);
  connect(m_import, &TraceImportJob::failed, this, &MainWindow::onImportFailed);
  setAcceptDrops(true);
}

bool MainWindow::openPath(const QString& path, bool background) {
  if (path.startsWith(QLatin1String("ddpscope:"), Qt::CaseInsensitive)) {
    QString error;
    if (openLink(path, &error)) return true;
    emit loadFailed(tr("Cannot open the link: %1").arg(error));
    return false;
  }
  // A file is read only when it is a regular one: a pipe would block before the window
  // shows, a device never end (ddpscope/regular_file.h).
  if (QFileInfo info(path); info.exists() && !info.isDir()) {
    if (const std::string why = why_not_regular_file(path.toStdString(), "run, trace, dump or lesson file");
        !why.empty()) {
      const QString message = tr("Cannot open %1").arg(QString::fromStdString(why));
      statusBar()->showMessage(message);
      emit loadFailed(message);
      return false;
    }
  }
  if (path.endsWith(QLatin1String(".ddplesson"))) return openLessonFile(path);
  if (const QStringList dumps = flightDumpFiles(path); !dumps.isEmpty()) return importFlightDumps(dumps, path);
  if (QFileInfo(path).exists() && isTraceInput(path)) return importTraces({path});
  if (!background) return openRun(path);
  openRunInBackground(path);
  return true;
}

bool MainWindow::importFlightDumps(const QStringList& dumps, const QString& named) {
  const QString out = importTargetFor({named}, m_runList->folder());
  std::vector<std::string> files;
  for (const QString& d : dumps)
    files.push_back(d.toStdString());
  try {
    probes::import_flight_dumps(files, out.toStdString());
  } catch (const std::exception& e) {
    const QString why = tr("Could not import the flight-recorder dumps: %1").arg(userMessage(e));
    statusBar()->showMessage(why);
    emit loadFailed(why);
    return false;
  }
  if (!openRun(out)) return false;
  showTab(QStringLiteral("hang"));
  statusBar()->showMessage(tr("Imported %1 into %2").arg(countOf(dumps.size(), tr("flight-recorder dump"))).arg(out));
  return true;
}

bool MainWindow::importTraces(const QStringList& inputs) {
  const QString earlier = findExistingImport(inputs, m_runList->folder());
  if (!earlier.isEmpty() && !m_import->isRunning()) {  // imported before, and unchanged since
    if (!openRun(earlier)) return false;
    statusBar()->showMessage(tr("These traces were imported before: opened %1").arg(earlier));
    emit importReused(earlier);
    return true;
  }
  const QString out = importTargetFor(inputs, m_runList->folder());
  QString error;
  if (!m_import->start(inputs, out, &error)) {
    statusBar()->showMessage(error);
    return false;
  }
  if (!m_importProgress) {
    m_importProgress = new QProgressDialog(this);
    m_importProgress->setWindowTitle(tr("Importing PyTorch traces"));
    m_importProgress->setRange(0, 1000);
    m_importProgress->setMinimumDuration(300);  // small jobs finish before it shows
    m_importProgress->setAutoClose(false);
    m_importProgress->setAutoReset(false);
    m_importProgress->setMinimumWidth(460);
    connect(m_importProgress, &QProgressDialog::canceled, m_import, &TraceImportJob::cancel);
  }
  m_importProgress->setLabelText(tr("Importing PyTorch traces into %1").arg(QFileInfo(out).fileName()));
  m_importProgress->setValue(0);
  statusBar()->showMessage(tr("Importing %1 into %2").arg(inputs.join(QStringLiteral(", ")), out));
  return true;
}

void MainWindow::onImportFinished(const QString& runFile, const QStringList& notes) {
  m_importProgress->reset();
  m_importProgress->hide();
  m_runList->refresh();
  if (!openRun(runFile)) return;
  QString message = tr("Imported PyTorch traces into %1").arg(runFile);
  if (!notes.isEmpty()) message += QStringLiteral(" (") + notes.join(QStringLiteral("; ")) + QStringLiteral(")");
  statusBar()->showMessage(message);
}

void MainWindow::onImportFailed(const QString& message, bool cancelled) {
  m_importProgress->reset();
  m_importProgress->hide();
  if (cancelled) {
    statusBar()->showMessage(message);
  } else {
    emit loadFailed(tr("Cannot import the traces: %1").arg(message));
  }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!event->mimeData()->hasUrls()) return;
  for (const QUrl& url : event->mimeData()->urls())
    if (!url.isLocalFile()) return;
  event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    paths << url.toLocalFile();
  if (paths.isEmpty()) return;
  event->acceptProposedAction();
  // Several trace files dropped together are one job's ranks; a run file opens as it is.
  if (paths.size() > 1) {
    importTraces(paths);
  } else {
    openPath(paths.first(), /*background=*/true);
  }
}

}  // namespace ddpscope::gui
