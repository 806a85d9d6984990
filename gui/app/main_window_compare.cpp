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
  const std::shared_ptr<const RunData> run = m_session->run();
  if (!run) {
    emit loadFailed(tr("Cannot compare: no run is open. Open the run to compare against (A) first."));
    return false;
  }
  ComparePage* compare = part<ComparePage>();
  try {
    auto other = std::make_shared<const RunData>(loadRun(path.toStdString()));
    probes::RunStoreReader a(run->path), b(path.toStdString());
    // Both runs are analysed already (the open one, and B by loadRun): not again.
    const probes::RunComparison comparison = probes::compare_runs(a, b, {}, {}, &run->analysis, &other->analysis);
    compare->showComparison(run, std::move(other), comparison);
  } catch (const std::exception& e) {
    emit loadFailed(tr("Cannot compare %1 with %2: %3")
                        .arg(QFileInfo(QString::fromStdString(run->path)).fileName(), path, userMessage(e)));
    return false;
  }
  // The page sits in an EmptyState (main_window_pages.cpp) that said "No comparison yet".
  if (auto* empty = qobject_cast<EmptyState*>(compare->parentWidget())) empty->setEmpty(QString());
  showTab(QStringLiteral("compare"));
  statusBar()->showMessage(QString::fromStdString(compare->comparison().headline));
  return true;
}

}  // namespace ddpscope::gui
