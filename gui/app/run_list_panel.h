// RunListPanel: the workspace's runs beside the tabs. Selecting a row opens its run in the
// session; the open run's row stays selected as the list is re-read and as runs change
// (a running job's file is listed from its first live load on). Shown when the user wants
// it and it has a run, or always once asked for (View > Run list). Where the panel is too
// narrow for every column, the last ones (Duration, Started, Model) are hidden, not scrolled
// to; each row's tooltip holds them all.
#pragma once

#include <QTableView>

namespace ddpscope::gui {

class RunListModel;
class RunSession;
class SortProxy;

class RunListPanel : public QTableView {
  Q_OBJECT

 public:
  RunListPanel(RunSession* session, QWidget* parent = nullptr);

  RunListModel* runs() const { return m_runs; }
  // Shows which run is open (current and selected) without reopening it; a run from
  // outside the workspace is listed first.
  void select(const QString& path);
  // View > Run list is ticked; ticked by the user this session (`askedFor`): shown even empty.
  void setWanted(bool wanted);
  void setAskedFor(bool askedFor);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void updateVisibility();
  void fitColumns();

  RunSession* m_session;
  RunListModel* m_runs;
  SortProxy* m_proxy;
  bool m_wanted = true;
  bool m_askedFor = false;
  bool m_rereading = false;
  QString m_selected;  // the run last selected here, so that live reloads select it once
};

}  // namespace ddpscope::gui
