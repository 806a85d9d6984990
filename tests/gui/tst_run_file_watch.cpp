// The open run's file watched: deleted while the app shows it, the views keep the run, a
// banner says what happened, and it can still be saved and exported; replaced on disk by
// another file moved over it, or rewritten in place, the app says so.
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
#include "run_store_writer.h"
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

class TestRunFileWatch : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // A fault: the run file deleted while the app shows it. The views keep the
  // run, the banner says what happened, and the run can still be saved and exported.
  void testRunFileDeletedWhileShown() {
    QTemporaryDir folder;
    const QString file = folder.filePath("shown.ddprun");
    ddpscope::gui::testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.show();
    QVERIFY(window.openRun(file));
    const int64_t spans = window.currentRun()->span_count;
    QCOMPARE(window.part<RunFileWatch>()->state(), RunFileWatch::State::Intact);
    QVERIFY(QFile::remove(file));
    QTRY_COMPARE_WITH_TIMEOUT(window.part<RunFileWatch>()->state(), RunFileWatch::State::Deleted, 5000);
    QVERIFY(window.part<QLabel>("errorBanner")->isVisible());
    QVERIFY2(window.part<QLabel>("errorBanner")->text().contains("was deleted from disk"),
             qPrintable(window.part<QLabel>("errorBanner")->text()));
    QVERIFY(window.currentRun());
    QCOMPARE(window.currentRun()->span_count, spans);  // nothing shown is lost
    QVERIFY(!window.part<QWidget>("reloadRun")->isVisible());
    // The deleted file's run, saved through the connection the app kept.
    const QString copy = folder.filePath("saved.ddprun");
    QVERIFY(window.saveRunCopy(copy));
    ddpscope::probes::RunStoreReader saved(copy.toStdString());
    QCOMPARE(saved.span_count(), spans);
    QCOMPARE(saved.run().world_size, 2);
    // Tabs that read the file again still work (the Buckets tab's advice reads it).
    window.showTab("Buckets");
    QVERIFY(window.currentRun());
  }

  // Replaced on disk: by another file moved over it, then by a run rewritten in place.
  void testRunFileReplacedWhileShown() {
    QTemporaryDir folder;
    const QString file = folder.filePath("shown.ddprun");
    ddpscope::gui::testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.show();
    QVERIFY(window.openRun(file));
    const QString other = folder.filePath("other.ddprun");
    ddpscope::gui::testing::write_test_run(other.toStdString(), 3, 2);
    QVERIFY(std::rename(other.toLocal8Bit().constData(), file.toLocal8Bit().constData()) == 0);
    QTRY_COMPARE_WITH_TIMEOUT(window.part<RunFileWatch>()->state(), RunFileWatch::State::Replaced, 5000);
    QVERIFY2(window.part<QLabel>("errorBanner")->text().contains("was replaced on disk by mlp, 3 ranks"),
             qPrintable(window.part<QLabel>("errorBanner")->text()));
    QCOMPARE(window.currentRun()->ranks.size(), size_t{2});  // the earlier run stays on screen
    QVERIFY(window.part<QWidget>("reloadRun")->isVisible());
    // The earlier run can still be kept: the app reads it through its own connection.
    QVERIFY(window.saveRunCopy(folder.filePath("earlier.ddprun")));
    QCOMPARE(ddpscope::probes::RunStoreReader(folder.filePath("earlier.ddprun").toStdString()).run().world_size, 2);
    // Reload shows the new file and the watch starts again.
    QVERIFY(QMetaObject::invokeMethod(window.part<QWidget>("reloadRun"), "click"));
    QCOMPARE(window.currentRun()->ranks.size(), size_t{3});
    QCOMPARE(window.part<RunFileWatch>()->state(), RunFileWatch::State::Intact);
    QVERIFY(!window.part<QLabel>("errorBanner")->isVisible());
    // The same run's config growing in place (a PyTorch job's ranks merge their DDP
    // settings into it while it runs): still the run shown, not "replaced".
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(file.toUtf8().constData(), &db), SQLITE_OK);
      QCOMPARE(sqlite3_exec(db, "UPDATE runs SET config_json = '{\"bucket_cap_mb\": 25}' WHERE run_id = 1", nullptr,
                            nullptr, nullptr),
               SQLITE_OK);
      sqlite3_close(db);
    }
    QTest::qWait(1500);  // the watch re-checks after its delay
    QCOMPARE(window.part<RunFileWatch>()->state(), RunFileWatch::State::Intact);
    // Rewritten in place (as --force does): the earlier run is gone, and saving says so.
    {
      QFile f(file);
      QVERIFY(f.open(QIODevice::ReadWrite));
      QVERIFY(f.resize(0));
    }
    QFile::remove(file + "-wal");
    QFile::remove(file + "-shm");
    ddpscope::gui::testing::write_test_run(file.toStdString(), 1, 3);
    QTRY_COMPARE_WITH_TIMEOUT(window.part<RunFileWatch>()->state(), RunFileWatch::State::Replaced, 5000);
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.saveRunCopy(folder.filePath("gone.ddprun")));
    QVERIFY2(failed.at(0).at(0).toString().contains("rewritten in place"), qPrintable(failed.at(0).at(0).toString()));
    QVERIFY(!QFile::exists(folder.filePath("gone.ddprun")));
  }

  // A collected job's run while it runs: its ranks grow the world as they join and name
  // their backend in place of "torch", then the collector ends it. The same run all along.
  void testALiveRunWhoseRanksJoinIsTheSameRun() {
    QTemporaryDir folder;
    const QString file = folder.filePath("collected.ddprun");
    ddpscope::probes::RunStoreWriter writer(file.toStdString());
    writer.begin_run({R"({"job":"collect"})", 1, "torch", "torch script"});
    ddpscope::probes::EventBatch first;
    first.rank = 0;
    writer.write(first);
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    QCOMPARE(window.part<RunFileWatch>()->state(), RunFileWatch::State::Intact);
    ddpscope::probes::EventBatch joined;
    joined.rank = 3;
    joined.records = {R"({"type":"settings","world_size":4,"backend":"gloo","values":{}})"};
    writer.write(joined);
    QVERIFY(writer.fold_wal());  // into the file itself, which the watch sees change
    QTest::qWait(1200);          // the watch re-checks after its delay
    QCOMPARE(window.part<RunFileWatch>()->state(), RunFileWatch::State::Intact);
    writer.end_run("finished");
    QVERIFY(writer.fold_wal());
    QTest::qWait(1200);
    QCOMPARE(window.part<RunFileWatch>()->state(), RunFileWatch::State::Intact);
    QVERIFY(!window.part<QLabel>("errorBanner")->isVisible());
  }
};

DDPSCOPE_TEST_MAIN(TestRunFileWatch)
#include "tst_run_file_watch.moc"
