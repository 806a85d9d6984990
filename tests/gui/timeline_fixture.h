// The app on the Timeline tab, for the timeline tests: a run opened and shown there, with
// the app's settings in a folder of the test's own.
#pragma once

#include <QtTest/QtTest>

#include <sqlite3.h>
#include <QClipboard>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QGraphicsRectItem>
#include <QGraphicsTextItem>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QAction>
#include <QMenuBar>
#include <QProgressBar>
#include <QTableWidget>
#include <QValueAxis>
#include <QCategoryAxis>
#include <QLogValueAxis>
#include <QChart>
#include <QChartView>
#include <QLegendMarker>
#include <QAbstractBarSeries>
#include <nlohmann/json.hpp>
#include <cmath>
#include <set>
#include "bucket_table_model.h"
#include "gui_test_runs.h"
#include "run_file_watch.h"
#include "run_store_reader.h"
#include "sqlite_db.h"
#include "graph_view.h"
#include "hang_view.h"
#include "bucket_fill_view.h"
#include "autograd_lesson_view.h"
#include "bucket_lesson_view.h"
#include "learn_page.h"
#include "ring_lesson_view.h"
#include "sequence_view.h"
#include "job_controller.h"
#include "launch_dialog.h"
#include "live_monitor.h"
#include "bucket_advice_view.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "ranks_page.h"
#include "summary_page.h"
#include "time_breakdown_page.h"
#include "shortcuts_dialog.h"
#include "sort_proxy.h"
#include "span_details.h"
#include "timeline_page.h"
#include "time_breakdown_page.h"
#include "time_format.h"
#include "timeline_view.h"
#include "track_layout.h"
#include <QStandardItemModel>
#include <QTableView>
#include <QTreeWidget>
#include "messages_page.h"
#include "overlap_model.h"
#include "run_list_model.h"
#include "run_open_job.h"
#include "timeline_view.h"
#include "trace_import_job.h"
#include <QDropEvent>
#include <QMimeData>
#include <QProcess>
#include <QProgressDialog>
#include <QStatusBar>

namespace ddpscope::gui::timeline_fixture {

using namespace ddpscope::gui;

// The window at 1400x900 with `file` open on its Timeline tab, drawn.
inline bool showOnTimeline(MainWindow& window, const QString& file) {
  window.resize(1400, 900);
  if (!window.openRun(file)) return false;
  window.showTab("Timeline");
  window.show();
  if (!QTest::qWaitForWindowExposed(&window)) return false;
  QCoreApplication::processEvents();
  return true;
}

// A 2-rank run of 6 iterations on the Timeline tab, at iteration 2 ([2000, 3000]).
struct AtIteration2 {
  QTemporaryDir folder;
  MainWindow window{folder.path()};
  TimelinePage* page = nullptr;
  TimelineView* view = nullptr;
  bool open() {
    const QString file = folder.filePath("job.ddprun");
    testing::write_test_run(file.toStdString(), 2, 6);
    if (!showOnTimeline(window, file)) return false;
    page = window.part<TimelinePage>();
    view = page->view();
    view->showIteration(2);
    return true;
  }
};

// The middle of `row` of `lane` at time `t` in the view.
inline QPoint pointAt(TimelineView* view, int64_t t, int lane, int row) {
  return QPoint(TimelineView::kLabelWidth + static_cast<int>(view->axis().toPx(t)),
                view->layout().rowTop(lane, row) + TrackLayout::kRowHeight / 2);
}

// What the tests of this fixture share.
class TimelineTest : public QObject {
 protected:
  // The app's settings (the launch dialog's last job) go here (initTestCase), never to
  // the user's ~/.config, and start empty.
  QTemporaryDir m_config;
};

}  // namespace ddpscope::gui::timeline_fixture
