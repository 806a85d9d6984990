// MainWindow: places the pages (main_window_pages.cpp) and the menus (main_window_menus.cpp)
// around one run session (run_session.h), which holds the open run, its file, the jobs,
// the live follow and the imports; the pages subscribe to it through the tabs (run_tabs.h).
// The workspace's runs on the left (run_list_panel.h), errors above the tabs
// (error_banner.h), the classroom (classroom_controller.h) beside the Learn page. What
// scripts and tests call here is the session's or a page's, reached from one place.
#pragma once

#include <QMainWindow>
#include <QSize>

#include "run_session.h"

class QAction;

namespace ddpscope::gui {

class ClassroomController;
class CollectDialog;
class ErrorBanner;
class LearnPage;
class RunListPanel;
class RunTabs;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(const QString& workspaceFolder, QWidget* parent = nullptr);
  ~MainWindow() override;

  RunSession* session() const { return m_session; }
  const RunData* currentRun() const { return m_session->run().get(); }
  // The session's (run_session.h).
  bool openRun(const QString& path) { return m_session->openRun(path); }
  void openRunInBackground(const QString& path) { m_session->openRunInBackground(path); }
  bool importTraces(const QStringList& inputs) { return m_session->importTraces(inputs); }
  bool launchJob(const LaunchConfig& config, QString* error) { return m_session->launchJob(config, error); }
  bool followRunFile(const QString& path, QString* error) { return m_session->followRunFile(path, error); }
  void followJob() { m_session->followJob(); }
  bool isFollowingJob() const { return m_session->isFollowingJob(); }
  void stopJob() { m_session->stopJob(); }
  void setStallTimeoutMs(int ms) { m_session->setStallTimeoutMs(ms); }
  bool saveRunCopy(const QString& path);  // the run list shows the copy
  // What the command line, File > Open and drops give: a run file (read off the UI thread
  // with `background`), a ddpscope: link, a lesson file, flight dumps or profiler traces.
  bool openPath(const QString& path, bool background = false);
  // The open run (A) beside the run at `path` (B) on the Compare tab; false with the reason
  // in the banner (no run open, B unreadable, a side with no finished iteration).
  bool compareWith(const QString& path);
  void showLaunchDialog();
  void showCollectDialog();  // Run > Collect from a job...
  CollectDialog* collectDialog() const { return m_collectDialog; }
  // The current tab as a PNG / its table as CSV; false with the reason shown.
  bool exportViewPng(const QString& path);
  bool exportTableCsv(const QString& path);

  // Tabs by id, case aside: summary, live, timeline, breakdown, ranks, overlap, buckets, graph,
  // messages, hang, links, compare, learn (the English titles, so --tab Hang works in any language).
  void showTab(const QString& id);
  int tabIndex(const QString& id) const;  // -1: no such tab
  bool tabIsEmpty(const QString& id) const;
  // View > Run list (Ctrl+B): shown or hidden (remembered); an empty list stays hidden
  // unless asked for.
  void setRunListShown(bool shown);
  bool runListShown() const;
  // The Learn tab: a lesson of the catalog (0-based), a lesson file (*.ddplesson), or the
  // lesson, step and view a ddpscope:learn?... link names; false with the reason.
  bool openLesson(int index);
  bool openLessonFile(const QString& path);
  bool openLink(const QString& link, QString* error);

  // The window's parts, for scripts and tests: the one child of type Part (named `name`
  // where several are: "tabs", "runs", "errorBanner", "reloadRun", "mainSplitter",
  // "runListAction", "stopAction", "followAction", "shortcutsAction"); null when none or several.
  template <class Part>
  Part* part(const char* name = nullptr) const {
    const auto found = findChildren<Part*>(name ? QString::fromLatin1(name) : QString());
    if (found.size() == 1) return found.front();
    qWarning("MainWindow::part: %d parts of type %s named \"%s\"", static_cast<int>(found.size()),
             Part::staticMetaObject.className(), name ? name : "");
    return nullptr;
  }

 signals:
  void loadFailed(const QString& message);
  void runShown();                            // a run (opened, or a live reload) is on screen
  void importReused(const QString& runFile);  // traces imported before were opened again

 protected:
  void showEvent(QShowEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildPages();  // main_window_pages.cpp
  void buildFileMenu();
  void buildRunMenu();
  void buildViewMenu();
  void buildLearnMenu();
  void buildHelpMenu();
  void answerSession();  // the window's own part: title, banner, status bar, progress

  RunSession* m_session;
  RunTabs* m_tabs = nullptr;
  RunListPanel* m_runList = nullptr;
  ErrorBanner* m_banner = nullptr;
  LearnPage* m_learn = nullptr;
  ClassroomController* m_classroom = nullptr;
  CollectDialog* m_collectDialog = nullptr;
  QAction* m_runListAction = nullptr;
  QSize m_fittedSize;  // the size fitToScreen chose, until the window is first shown
};

}  // namespace ddpscope::gui
