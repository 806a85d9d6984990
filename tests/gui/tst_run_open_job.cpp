// Runs open off the UI thread: the run list, File > Open and drops return at once with a
// busy indicator, the run appears when read, the last request wins, and a failure is
// explained with the open run kept.
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

class TestRunOpenJob : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // The run list, File > Open and drops read a run off the UI thread: the call returns
  // at once with a busy indicator shown, the run appears when read, the last request
  // wins, and a failure is explained with the open run kept.
  void testRunsOpenOffTheUiThread() {
    QTemporaryDir folder;
    const QString small = folder.filePath("small.ddprun");
    const QString large = folder.filePath("large.ddprun");
    ddpscope::gui::testing::write_test_run(small.toStdString(), 2, 3);
    ddpscope::gui::testing::write_test_run(large.toStdString(), 4, 400);
    MainWindow window(folder.path());
    window.show();
    QSignalSpy shown(&window, &MainWindow::runShown);
    window.openRunInBackground(large);
    QVERIFY(window.part<RunOpenJob>()->isBusy());
    QCOMPARE(shown.count(), 0);  // not read on this thread
    auto* busy = window.findChild<QProgressBar*>("openProgress");
    QVERIFY(busy && busy->isVisible());
    QVERIFY(window.statusBar()->currentMessage().contains("Opening large.ddprun"));
    QTRY_VERIFY(window.currentRun() != nullptr);
    QCOMPARE(QString::fromStdString(window.currentRun()->path), large);
    QVERIFY(!busy->isVisible());
    // Two requests in a row: the later one is what stays on screen.
    window.openRunInBackground(large);
    window.openRunInBackground(small);
    QTRY_VERIFY(!window.part<RunOpenJob>()->isBusy());
    QCOMPARE(QString::fromStdString(window.currentRun()->path), small);
    // A damaged file: said in the banner, the open run kept.
    const QString bad = folder.filePath("bad.ddprun");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(1000, 'q'));
    f.close();
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    window.openRunInBackground(bad);
    QTRY_COMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains("not a ddpscope run file"));
    QCOMPARE(QString::fromStdString(window.currentRun()->path), small);
    QVERIFY(!busy->isVisible());
    // Opening directly (the command line) drops a background request still under way.
    window.openRunInBackground(large);
    QVERIFY(window.openRun(small));
    QTest::qWait(300);
    QCOMPARE(QString::fromStdString(window.currentRun()->path), small);
  }
};

DDPSCOPE_TEST_MAIN(TestRunOpenJob)
#include "tst_run_open_job.moc"
