// MainWindow: what the command line, File > Open and drag and drop give, taken where it
// belongs: a run file to the session, traces and flight dumps imported by it, a lesson
// file or a ddpscope: link to the Learn page.
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMimeData>
#include <QStatusBar>

#include "ddpscope/regular_file.h"
#include "main_window.h"
#include "trace_import_job.h"

namespace ddpscope::gui {

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
      emit loadFailed(tr("Cannot open %1").arg(QString::fromStdString(why)));
      return false;
    }
  }
  if (path.endsWith(QLatin1String(".ddplesson"))) return openLessonFile(path);
  if (const QStringList dumps = flightDumpFiles(path); !dumps.isEmpty())
    return m_session->importFlightDumps(dumps, path);
  if (QFileInfo(path).exists() && isTraceInput(path)) return importTraces({path});
  if (!background) return openRun(path);
  openRunInBackground(path);
  return true;
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
