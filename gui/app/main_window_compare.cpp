// MainWindow: the open run compared with another (File > Compare with another run...,
// `ddpscope RUN --compare OTHER`) on the Compare tab.
#include <QFileInfo>
#include <QStatusBar>

#include "compare_page.h"
#include "empty_state.h"
#include "main_window.h"
#include "run_compare.h"
#include "run_data.h"
#include "user_message.h"

namespace ddpscope::gui {

bool MainWindow::compareWith(const QString& path) {
  if (!m_run) {
    emit loadFailed(tr("Cannot compare: no run is open. Open the run to compare against (A) first."));
    return false;
  }
  try {
    auto other = std::make_shared<const RunData>(loadRun(path.toStdString()));
    probes::RunStoreReader a(m_run->path), b(path.toStdString());
    // Both runs are analysed already (the open one, and B by loadRun): not again.
    const probes::RunComparison comparison = probes::compare_runs(a, b, {}, {}, &m_run->analysis, &other->analysis);
    m_compare->showComparison(m_run, std::move(other), comparison);
  } catch (const std::exception& e) {
    emit loadFailed(tr("Cannot compare %1 with %2: %3")
                        .arg(QFileInfo(QString::fromStdString(m_run->path)).fileName(), path, userMessage(e)));
    return false;
  }
  m_compareEmpty->setEmpty(QString());
  showTab(QStringLiteral("compare"));
  statusBar()->showMessage(QString::fromStdString(m_compare->comparison().headline));
  return true;
}

}  // namespace ddpscope::gui
