// RunTabs: the window's tabs, each found by an id of its own ("hang"), never by its
// translated title. The pages that show the open run (run_page.h) subscribe through it to
// the run session: a new run or a live reload reaches the page on screen at once and the
// others when they are next shown (rebuilding every page two to four times a second would
// starve a live job).
#pragma once

#include <QTabWidget>
#include <set>
#include <utility>
#include <vector>

namespace ddpscope::gui {

class RunPage;
class RunSession;

class RunTabs : public QTabWidget {
  Q_OBJECT

 public:
  explicit RunTabs(RunSession* session, QWidget* parent = nullptr);

  // A tab; `shows`: the page in it that shows the open run, told of each run.
  void addPage(QWidget* page, const char* id, const QString& title, RunPage* shows = nullptr);
  int tabIndex(const QString& id) const;  // case aside; -1: no such tab
  void showTab(const QString& id);
  bool tabIsEmpty(const QString& id) const;  // its empty state (empty_state.h) is shown
  // The page shows the open run now, if it has not since the run last changed.
  void refresh(RunPage* page);
  RunPage* pageShowing(const QString& id) const;

 private:
  RunPage* runPageAt(int index) const;  // null: the tab at `index` shows no run
  void onRunChanged(bool live, bool sameRun);
  void sayWhyEmpty(QWidget* tab, const RunPage& page) const;
  void refreshCurrent();

  RunSession* m_session;
  std::vector<std::pair<QWidget*, RunPage*>> m_runPages;  // tab -> the page in it that shows the run
  std::set<RunPage*> m_dirty;                             // pages not yet showing the latest run data
  bool m_sameRun = false;                                 // the pages show an earlier load of this run
};

}  // namespace ddpscope::gui
