// The View and Help menus, and Help > Keyboard shortcuts: it lists the keys the timeline
// answers to.
#include <QtTest/QtTest>

#include <sqlite3.h>

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
#include "test_registry.h"

using namespace ddpscope::gui;

class TestShortcutsDialog : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // View and Help menus; Help ▸ Keyboard shortcuts lists the keys the
  // timeline answers to (tested above: W/A/S/D, F, Esc, Ctrl+F, /).
  void testHelpAndViewMenus() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    // Empty states say why and what to do, rather than blank axes.
    for (const char* tab : {"Overlap", "Buckets", "Graph", "Messages", "Hang"})
      QVERIFY2(window.tabIsEmpty(tab), tab);
    ddpscope::gui::testing::write_seed_graphs(folder.filePath("rpc.ddprun").toStdString());
    QVERIFY(window.openRun(folder.filePath("rpc.ddprun")));
    QVERIFY(window.tabIsEmpty("Overlap"));  // an RPC run: no DDP iterations
    QVERIFY(!window.tabIsEmpty("Graph"));
    QVERIFY(!window.tabIsEmpty("Hang"));
    ddpscope::gui::testing::write_test_run(folder.filePath("ddp.ddprun").toStdString(), 2, 3);
    QVERIFY(window.openRun(folder.filePath("ddp.ddprun")));
    QVERIFY(!window.tabIsEmpty("Overlap"));
    QVERIFY(!window.tabIsEmpty("Buckets"));
    QVERIFY(window.tabIsEmpty("Messages"));  // DDP: no RPC messages
    QStringList menus;
    for (QAction* a : window.menuBar()->actions())
      menus << a->text().remove('&');
    QVERIFY2(menus.contains("View") && menus.contains("Help"), qPrintable(menus.join(",")));
    QVERIFY(window.part<QAction>("shortcutsAction"));
    ShortcutsDialog dialog;
    QStringList keys;
    for (int r = 0; r < dialog.table()->rowCount(); ++r)
      keys << dialog.table()->item(r, 0)->text();
    for (const char* k : {"W  or  +", "S  or  −", "A  or  ←", "D  or  →", "F", "Esc", "Ctrl+F  or  /", "Drag"})
      QVERIFY2(keys.contains(k), k);
    QVERIFY(dialog.table()->isSortingEnabled());
  }
};

DDPSCOPE_TEST_MAIN(TestShortcutsDialog)
#include "tst_shortcuts_dialog.moc"
