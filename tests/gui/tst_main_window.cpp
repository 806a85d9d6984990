// The main window on the offscreen platform: tabs by id, a run opened and every view
// filled, the open run kept through focus and tabs, exports, screenshots, a finished run
// in the hang view, and a bad file explained, not thrown through the event loop. Each
// page's own behaviour is in its test (tst_learn_page, tst_timeline_page,
// tst_live_monitor, tst_buckets_page, tst_time_breakdown_page, tst_launch_dialog...).
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

class TestMainWindow : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // A PyTorch job's traces open as a run (the command line and File > Open go through
  // openPath): imported into the workspace off the UI thread, then every view has it.
  // Opening the same traces again opens that run instead of importing them twice.
  // Tabs are addressed by id, not by their (translatable) titles: renamed, as a
  // translation would, they are still found, by the command line's English names too.
  void testTabsAreFoundByIdWhateverTheirTitles() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    const int hang = window.tabIndex("hang");
    QVERIFY(hang >= 0);
    for (int i = 0; i < window.part<QTabWidget>("tabs")->count(); ++i)
      window.part<QTabWidget>("tabs")->setTabText(i, QString("Onglet %1").arg(i));
    window.showTab("Hang");
    QCOMPARE(window.part<QTabWidget>("tabs")->currentIndex(), hang);
    window.showTab("timeline");
    QCOMPARE(window.part<QTabWidget>("tabs")->currentIndex(), window.tabIndex("Timeline"));
    QVERIFY(window.tabIsEmpty("hang"));  // no run open
    QCOMPARE(window.tabIndex("nonsense"), -1);
    window.showTab("nonsense");  // stays where it was
    QCOMPARE(window.part<QTabWidget>("tabs")->currentIndex(), window.tabIndex("timeline"));
  }

  // A world size a trace claims sizes nothing: a trace of rank 0 saying 10^9 ranks opens
  // in moments (it filled 6.6 GB and never showed: a lifeline per claimed rank).
  void testAClaimedWorldSizeSizesNothing() {
    QTemporaryDir folder;
    QProcess gunzip;
    gunzip.start("gzip", {"-dc", QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/kineto_cpu_gloo_2/rank0.json.gz"});
    QVERIFY(gunzip.waitForFinished(10000));
    QByteArray text = gunzip.readAllStandardOutput();
    text.replace("\"world_size\": 2", "\"world_size\": 1000000000");
    QVERIFY(text.contains("1000000000"));
    const QString trace = folder.filePath("rank0.json");
    QFile f(trace);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
    f.close();
    const auto peak = [] {
      QFile status("/proc/self/status");
      status.open(QIODevice::ReadOnly);
      for (const QByteArray& line : status.readAll().split('\n'))
        if (line.startsWith("VmHWM:")) return line.mid(6).trimmed().split(' ').front().toLong();
      return 0L;
    };
    const long before = peak();
    MainWindow window(folder.path());
    QSignalSpy finished(window.part<TraceImportJob>(), &TraceImportJob::finished);
    QVERIFY(window.openPath(trace));
    QVERIFY(finished.wait(30000));
    QVERIFY(window.currentRun());
    QCOMPARE(window.currentRun()->run.world_size, int64_t{1000000000});
    for (const char* tab : {"Summary", "Ranks", "Messages", "Timeline"})
      window.showTab(tab);
    QVERIFY2(peak() - before < 300 * 1024, qPrintable(QString::number(peak() - before)));
  }

  void testOpensARunAndFillsTheViews() {
    QTemporaryDir folder;
    const QString file = folder.filePath("job.ddprun");
    testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.show();
    QCOMPARE(window.part<RunListModel>()->rowCount(), 1);
    QVERIFY(window.openRun(file));
    QVERIFY(window.currentRun());
    QCOMPARE(window.part<QTabWidget>("tabs")->count(),
             13);  // Summary, Live, Timeline, Breakdown, Ranks, ..., Hang, Links, Compare, Learn
    QCOMPARE(window.part<OverlapPage>()->model()->rowCount(), 6);        // rank 0's iterations
    QCOMPARE(window.part<BucketsPage>()->bucketModel()->rowCount(), 2);  // iteration 2 of rank 0
    // A finished run's curves are on the Live tab too: overlap per rank and iteration.
    QCOMPARE(window.part<LiveMonitor>()->pointCount("overlap"), 12);
    QVERIFY(window.part<LiveMonitor>()->statusLabel()->text().contains("6 iterations recorded"));
    QVERIFY(window.windowTitle().contains("job.ddprun"));

    // The timeline: a lane per rank and thread, zoom with the wheel, click for details.
    TimelineView* timeline = window.part<TimelinePage>()->view();
    QCOMPARE(timeline->data().lanes.size(), size_t(4));  // 2 ranks x (compute, comm)
    QCOMPARE(timeline->data().iterations.size(), size_t(6));
    window.showTab("Timeline");
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCoreApplication::processEvents();  // the tab's layout settles the timeline's size
    timeline->showIteration(2);         // iteration 3: [2000, 3000] ns
    QVERIFY(timeline->axis().begin_ns < 2000 && timeline->axis().end_ns > 3000);
    const int64_t before = timeline->axis().end_ns - timeline->axis().begin_ns;
    QWheelEvent wheel(QPointF(400, 50), timeline->mapToGlobal(QPointF(400, 50)), QPoint(), QPoint(0, 240), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(timeline, &wheel);
    QVERIFY(timeline->axis().end_ns - timeline->axis().begin_ns < before);  // zoomed in
    timeline->showIteration(2);
    QSignalSpy clicked(timeline, &TimelineView::spanClicked);
    // Rank 0's compute lane (the first), at 2100 ns: inside forward [2000, 2200], drawn
    // in the row under the iteration's.
    QCOMPARE(timeline->data().lanes[0].label, std::string("rank 0 · compute"));
    const int x = TimelineView::kLabelWidth + static_cast<int>(timeline->axis().toPx(2100));
    const int y = timeline->layout().rowTop(0, 1) + TrackLayout::kRowHeight / 2;
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::NoModifier, QPoint(x, y));
    QCOMPARE(clicked.count(), 1);
    QVERIFY2(clicked.at(0).at(0).toString().contains("forward"), qPrintable(clicked.at(0).at(0).toString()));
    QVERIFY(!timeline->grab().isNull());
    // Each bucket allreduce is linked from rank 0 to rank 1 by its sequence number: 2 per
    // iteration, both ranks in step here (a straight link).
    QCOMPARE(timeline->data().flows.size(), size_t{12});
    for (const auto& f : timeline->data().flows) {
      QCOMPARE(static_cast<int>(f.kind), static_cast<int>(TimelineFlow::Kind::Collective));
      QCOMPARE(timeline->data().lanes[f.from_lane].rank, 0);
      QCOMPARE(timeline->data().lanes[f.to_lane].rank, 1);
      QCOMPARE(f.from_ns, f.to_ns);
    }
    QVERIFY(timeline->drawnFlows() > 0);  // the last grab drew iteration 3's
    // Every table of the app sorts by a click on its header.
    const auto tables = window.findChildren<QTableView*>();
    QVERIFY(tables.size() >= 7);
    for (QTableView* t : tables)
      QVERIFY2(t->isSortingEnabled(), qPrintable(t->model()->headerData(0, Qt::Horizontal).toString()));
  }

  void testOpenRunStaysOpenThroughFocusAndTabs() {
    QTemporaryDir folder;
    testing::write_test_run(folder.filePath("one.ddprun").toStdString(), 2, 3);
    testing::write_test_run(folder.filePath("two.ddprun").toStdString(), 2, 6);
    MainWindow window(folder.path());
    QCOMPARE(window.part<RunListModel>()->rowCount(), 2);
    // The run the user opens (as `ddpscope FILE` does, before the window shows) is the
    // list's second row: the first focus made the first row current.
    const QString first = window.part<RunListModel>()->index(0, 0).data(RunListModel::PathRole).toString();
    const QString mine = window.part<RunListModel>()->index(1, 0).data(RunListModel::PathRole).toString();
    QVERIFY(window.openRun(mine));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const auto open_path = [&] { return QString::fromStdString(window.currentRun()->path); };
    QCOMPARE(open_path(), mine);
    auto* list = window.findChild<QTableView*>();  // the run list is the first table view
    QVERIFY(list && static_cast<QSortFilterProxyModel*>(list->model())->sourceModel() == window.part<RunListModel>());
    QApplication::setActiveWindow(&window);
    list->setFocus(Qt::TabFocusReason);
    QFocusEvent focus_in(QEvent::FocusIn, Qt::TabFocusReason);
    QApplication::sendEvent(list, &focus_in);
    QApplication::processEvents();
    QCOMPARE(open_path(), mine);
    for (int tab = 0; tab < window.part<QTabWidget>("tabs")->count(); ++tab) {
      window.part<QTabWidget>("tabs")->setCurrentIndex(tab);
      QApplication::processEvents();
    }
    window.activateWindow();
    QApplication::processEvents();
    QCOMPARE(open_path(), mine);
    QVERIFY(window.windowTitle().contains(QFileInfo(mine).fileName()));
    // The open run's row is the selected one; choosing the other row opens it.
    QCOMPARE(list->currentIndex().row(), 1);
    list->selectRow(0);  // read off the UI thread
    QTRY_COMPARE(open_path(), first);
  }

  void testExportsTheViewAndItsTable() {
    QTemporaryDir folder;
    const QString file = folder.filePath("job.ddprun");
    testing::write_test_run(file.toStdString(), 2, 3);
    MainWindow window(folder.path());
    window.show();
    QVERIFY(window.openRun(file));
    window.showTab("Buckets");
    const QString png = folder.filePath("view.png");
    QVERIFY(window.exportViewPng(png));
    QImage image(png);
    QVERIFY(!image.isNull() && image.width() > 100);
    const QString csv = folder.filePath("table.csv");
    QVERIFY(window.exportTableCsv(csv));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);  // the bucket table of iteration 2: header + 2 buckets
    QVERIFY(lines[0].startsWith("Bucket,"));
    window.showTab("Summary");
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.exportTableCsv(folder.filePath("none.csv")));
    QVERIFY(failed.at(0).at(0).toString().contains("no table"));
    window.showTab("Overlap");
    QVERIFY(window.exportTableCsv(csv));
  }

  void testFinishedRunInTheHangView() {
    QTemporaryDir folder;
    const QString file = folder.filePath("failed.ddprun");
    testing::write_test_run(file.toStdString(), 2, 3, "failed");
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    QVERIFY2(window.part<HangView>()->headline().contains("failed"), qPrintable(window.part<HangView>()->headline()));
    QCOMPARE(window.part<HangView>()->table()->rowCount(), 2);
  }

  // `ddpscope --screenshot --size WxH` renders the window at that size (README's shots at
  // a laptop's 1280x800, not the 1600x1000 default); a malformed size is refused, saying
  // what is expected.
  void testScreenshotAtAChosenSize() {
    QTemporaryDir folder;
    const QString run = folder.filePath("job.ddprun"), png = folder.filePath("shot.png");
    testing::write_test_run(run.toStdString(), 2, 5);
    QProcess app;
    app.start(DDPSCOPE_APP_PATH, {run, "--tab", "Buckets", "--size", "1280x800", "--screenshot", png});
    QVERIFY(app.waitForFinished(60000));
    QVERIFY2(app.exitCode() == 0, app.readAllStandardError().constData());
    // The size as asked (the window's minimum height was 811 px, over a 1280x800 screen).
    QCOMPARE(QImage(png).size(), QSize(1280, 800));
    app.start(DDPSCOPE_APP_PATH, {run, "--size", "1280by800", "--screenshot", png});
    QVERIFY(app.waitForFinished(60000));
    QCOMPARE(app.exitCode(), 2);
    QVERIFY(QString::fromUtf8(app.readAllStandardError()).contains("expected WIDTHxHEIGHT"));
  }

  // `--tab Timeline --iteration N --range A:B` frames the timeline as asked (the screenshot
  // script's shots); every part the command line reaches is found (no "MainWindow::part").
  void testScreenshotOfARangeInTheTimeline() {
    QTemporaryDir folder;
    const QString run = folder.filePath("job.ddprun"), png = folder.filePath("range.png");
    testing::write_test_run(run.toStdString(), 2, 5);
    QProcess app;
    app.start(DDPSCOPE_APP_PATH, {run, "--tab", "Timeline", "--iteration", "3", "--range", "0.001:0.002", "--size",
                                  "1280x800", "--screenshot", png});
    QVERIFY(app.waitForFinished(60000));
    const QString err = QString::fromUtf8(app.readAllStandardError());
    QVERIFY2(app.exitStatus() == QProcess::NormalExit && app.exitCode() == 0, qPrintable(err));
    QVERIFY2(!err.contains("MainWindow::part"), qPrintable(err));
    QCOMPARE(QImage(png).size(), QSize(1280, 800));
  }

  void testBadFileIsExplained() {
    QTemporaryDir folder;
    const QString good = folder.filePath("good.ddprun");
    testing::write_test_run(good.toStdString(), 1, 2);
    const QString bad = folder.filePath("bad.ddprun");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(1000, 'q'));
    f.close();
    MainWindow window(folder.path());
    window.show();
    QVERIFY(window.openRun(good));
    QVERIFY(!window.part<QLabel>("errorBanner")->isVisible());
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.openRun(bad));
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains("not a ddpscope run file"));
    QVERIFY(window.currentRun());  // the good run stays open
    // The error is shown whole, in words for users: no source location.
    QVERIFY(window.part<QLabel>("errorBanner")->isVisible());
    QCOMPARE(window.part<QLabel>("errorBanner")->text(), failed.at(0).at(0).toString());
    QVERIFY2(!window.part<QLabel>("errorBanner")->text().contains(".cpp:"),
             qPrintable(window.part<QLabel>("errorBanner")->text()));
    QVERIFY(window.part<QLabel>("errorBanner")->wordWrap());
    QVERIFY(!window.openRun(folder.filePath("missing.ddprun")));
    // Every kind of damaged file: a clear error each, the good run kept, no crash.
    QFile goodFile(good);
    QVERIFY(goodFile.open(QIODevice::ReadOnly));
    const QByteArray bytes = goodFile.readAll();
    const QString newer = folder.filePath("newer.ddprun");
    QVERIFY(QFile::copy(good, newer));
    {
      ddpscope::probes::SqliteDb db(newer.toStdString(), SQLITE_OPEN_READWRITE);
      db.exec("PRAGMA user_version = 999");
    }
    const std::pair<QString, QByteArray> damaged[] = {{"empty.ddprun", QByteArray()},
                                                      {"truncated.ddprun", bytes.left(bytes.size() / 3)},
                                                      {"header.ddprun", bytes.left(100)}};
    QStringList files = {newer, folder.path()};
    for (const auto& [name, content] : damaged) {
      QFile d(folder.filePath(name));
      QVERIFY(d.open(QIODevice::WriteOnly));
      d.write(content);
      files << d.fileName();
    }
    for (const QString& file : files) {
      const int before = failed.count();
      QVERIFY2(!window.openRun(file), qPrintable(file));
      QCOMPARE(failed.count(), before + 1);
      const QString said = failed.last().at(0).toString();
      QVERIFY2(said.startsWith("Cannot open " + file + ": ") && !said.contains(".cpp:"), qPrintable(said));
      QCOMPARE(QString::fromStdString(window.currentRun()->path), good);
    }
    QVERIFY2(failed.last().size() && failed.at(failed.count() - 5).at(0).toString().contains("newer ddpscope"),
             qPrintable(failed.at(failed.count() - 5).at(0).toString()));
    QVERIFY(window.openRun(good));  // a run that opens clears it
    QVERIFY(!window.part<QLabel>("errorBanner")->isVisible());
    // Without a job, the job's actions are off (they did nothing, silently).
    QVERIFY(!window.part<QAction>("stopAction")->isEnabled());
    QVERIFY(!window.part<QAction>("followAction")->isEnabled());
  }
};

DDPSCOPE_TEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
