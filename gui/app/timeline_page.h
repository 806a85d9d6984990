// TimelinePage: the Timeline tab. A search bar (Ctrl+F or /), the colour legend, the
// tracks, and under them a details panel for the selected span (its fields, parent,
// children and the same collective on other ranks, each a click away) and the summary of
// a dragged range (time by name and kind, sortable).
#pragma once

#include <QFutureWatcher>
#include <QWidget>
#include <string>
#include <memory>

#include "timeline_search.h"
#include "run_page.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QTreeWidget;
class QTreeWidgetItem;

namespace ddpscope::gui {

class TimelineDetailLoader;
class TimelineView;

class TimelinePage : public QWidget, public RunPage {
  Q_OBJECT

 public:
  explicit TimelinePage(QWidget* parent = nullptr);
  void showRun(const ShownRun& shown) override;
  void releaseRun(bool sameRun) override;
  TimelineView* view() const { return m_view; }
  // Loads a big run's detail for the window shown; its status shows above the tracks.
  TimelineDetailLoader* detailLoader() const { return m_detailLoader; }
  QLabel* detailNote() const { return m_detailNote; }
  QLabel* legend() const { return m_legend; }
  QTreeWidget* details() const { return m_details; }
  // Puts the Details rows selected (all when none is) on the clipboard, "field<TAB>value"
  // a line, a group's rows indented under it.
  void copyDetails() const;
  // The run file the view shows: where Details reads a selected span's whole record.
  void setRunFile(const std::string& path) { m_runFile = path; }
  // What the message selected with the view's selectFlow is (the Messages tab's words),
  // shown in Details with its ends.
  void setFlowNote(const QString& note) { m_flowNote = note; }
  QTableView* rangeTable() const { return m_rangeTable; }
  QStandardItemModel* rangeModel() const { return m_rangeModel; }
  QLabel* rangeHeader() const { return m_rangeHeader; }
  QLineEdit* searchField() const { return m_search; }
  QLabel* searchStatus() const { return m_searchStatus; }
  QWidget* searchBar() const { return m_searchBar; }
  // The search's matches (after the last search), and the one shown (-1: none).
  const SearchResults& searchResults() const { return m_results; }
  int currentMatch() const { return m_current; }
  // Timelines of more spans than this are searched off the UI thread (tests set 0).
  void setSearchInBackgroundAbove(int64_t spans) { m_searchInBackgroundAbove = spans; }

 public slots:
  void showSearch();
  void findNext();
  void findPrevious();
  void refreshLegend();

 private:
  QWidget* buildSearchBar();
  QWidget* buildDetailsPanel();
  void addRecordedFields(int64_t rowid);
  QString detailsText() const;  // what copyDetails puts on the clipboard
  QWidget* buildRangePanel();
  void connectSignals();
  void runSearch();
  // A timeline of more than kSearchInBackground spans is searched off the UI thread (a
  // 100M-span run's structure: 7.7M spans, ~0.5 s for a common name); the match is
  // shown when the search ends. `forward`: the first match from the view's left edge,
  // else the last.
  static constexpr int64_t kSearchInBackground = 2'000'000;
  int64_t m_searchInBackgroundAbove = kSearchInBackground;
  std::string m_runFile;
  void searchThenShow(bool forward);
  void showFirstFrom(bool forward);
  void showMatch(int index);
  void showDetails();
  void showFlowDetails();
  void showRange();
  QTreeWidgetItem* refItem(const QString& label, int lane, int64_t index, int in);

  TimelineView* m_view = nullptr;
  TimelineDetailLoader* m_detailLoader = nullptr;
  QLabel* m_detailNote = nullptr;
  QLabel* m_legend = nullptr;
  QWidget* m_searchBar = nullptr;
  QLineEdit* m_search = nullptr;
  QLabel* m_searchStatus = nullptr;
  QTabWidget* m_panels = nullptr;
  QString m_flowNote;
  QTreeWidget* m_details = nullptr;
  QLabel* m_rangeHeader = nullptr;
  QTableView* m_rangeTable = nullptr;
  QStandardItemModel* m_rangeModel = nullptr;
  SearchResults m_results;
  std::string m_searched;
  QFutureWatcher<SearchResults> m_searchWatcher;
  std::string m_searching;  // the query of the search under way
  bool m_searchForward = true;
  int m_dataGeneration = 0;  // counts dataReplaced: a search of older data is dropped
  int m_searchGeneration = 0;
  int m_current = -1;
};

}  // namespace ddpscope::gui
