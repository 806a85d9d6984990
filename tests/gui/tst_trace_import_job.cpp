// PyTorch traces opened in the window: a folder, dropped files, a cancelled import and
// bad traces explained.
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

class TestTraceImportJob : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  void testOpensAFolderOfPyTorchTraces() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QSignalSpy finished(window.part<TraceImportJob>(), &TraceImportJob::finished);
    QSignalSpy progress(window.part<TraceImportJob>(), &TraceImportJob::progress);
    QVERIFY(window.openPath(QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/kineto_cuda_gloo_2"));
    QVERIFY(window.part<TraceImportJob>()->isRunning());
    QVERIFY(finished.wait(30000));
    QVERIFY(!progress.isEmpty());
    const QString runFile = folder.filePath("kineto_cuda_gloo_2.ddprun");
    QCOMPARE(finished.first().first().toString(), runFile);
    QVERIFY(window.currentRun());
    QCOMPARE(QString::fromStdString(window.currentRun()->path), runFile);
    QCOMPARE(window.currentRun()->ranks.size(), size_t{2});
    QCOMPARE(window.currentRun()->run.backend, std::string("gloo"));
    QCOMPARE(window.part<RunListModel>()->rowCount(), 1);  // in the workspace's list
    // GPU streams are timeline tracks with their kernels; the summary has GPU time.
    const TimelineData& t = window.part<TimelinePage>()->view()->data();
    QVERIFY(t.kinds_present & (1u << static_cast<int>(ddpscope::probes::Kind::GpuKernel)));
    int gpuLanes = 0;
    for (const auto& lane : t.lanes)
      gpuLanes += lane.thread_name.rfind("GPU 0 stream ", 0) == 0 ? 1 : 0;
    QVERIFY(gpuLanes >= 2);
    // Each launch is drawn to the GPU work it started (the trace's correlation id): as
    // many launch flows as GPU spans with a launch, each from a CPU lane to a GPU lane.
    ddpscope::probes::RunStoreReader reader(runFile.toStdString());
    std::set<std::pair<int, int64_t>> launchIds;
    ddpscope::probes::SpanQuery q;
    q.kinds = {ddpscope::probes::Kind::CudaRuntime};
    for (const auto& l : reader.spans(q))
      launchIds.insert({l.rank, l.msg_id});
    q.kinds = {ddpscope::probes::Kind::GpuKernel, ddpscope::probes::Kind::GpuComm, ddpscope::probes::Kind::GpuMemcpy,
               ddpscope::probes::Kind::GpuMemset};
    size_t launched = 0;
    for (const auto& k : reader.spans(q))
      launched += launchIds.count({k.rank, k.msg_id});
    QVERIFY(launched > 100);
    size_t launchFlows = 0;
    for (const auto& f : t.flows) {
      if (f.kind != TimelineFlow::Kind::Launch) continue;
      ++launchFlows;
      QVERIFY(t.lanes[f.from_lane].thread_name.rfind("GPU ", 0) != 0);
      QVERIFY(t.lanes[f.to_lane].thread_name.rfind("GPU ", 0) == 0);
      QVERIFY(f.from_ns <= f.to_ns);  // a kernel starts after its launch
    }
    QCOMPARE(launchFlows, launched);
    QCOMPARE(window.currentRun()->gpu.ranks.size(), size_t{2});
    window.showTab("Summary");
    bool summaryHasGpu = false;
    for (QLabel* label : window.findChildren<QLabel*>())
      summaryHasGpu = summaryHasGpu || label->text().contains("GPU time");
    QVERIFY(summaryHasGpu);
    for (const char* tab : {"Timeline", "Breakdown", "Overlap", "Hang"}) {
      window.showTab(tab);
      QVERIFY2(!window.tabIsEmpty(tab), tab);
    }
    // Again: the earlier import is opened, nothing new is written.
    QSignalSpy reused(&window, &MainWindow::importReused);
    QVERIFY(window.openPath(QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/kineto_cuda_gloo_2"));
    QCOMPARE(reused.size(), 1);
    QVERIFY(!window.part<TraceImportJob>()->isRunning());
    QCOMPARE(QDir(folder.path()).entryList({"*.ddprun"}), QStringList{"kineto_cuda_gloo_2.ddprun"});
  }

  // Drag and drop: trace files dropped together are one job's ranks.
  void testDroppedTraceFilesAreImported() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.show();
    QSignalSpy finished(window.part<TraceImportJob>(), &TraceImportJob::finished);
    QMimeData mime;
    const QString dir = QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/kineto_cpu_gloo_2";
    mime.setUrls({QUrl::fromLocalFile(dir + "/rank0.json.gz"), QUrl::fromLocalFile(dir + "/rank1.json.gz")});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&window, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&window, &drop);
    QVERIFY(finished.wait(30000));
    QVERIFY(window.currentRun());
    QCOMPARE(window.currentRun()->ranks.size(), size_t{2});
    QCOMPARE(QFileInfo(QString::fromStdString(window.currentRun()->path)).fileName(),
             QStringLiteral("kineto_cpu_gloo_2.ddprun"));
  }

  // A long import shows its progress and stops when cancelled: no run, no partial file,
  // and the status bar says so. A bad trace is explained in the banner.
  void testImportCanBeCancelledAndExplainsBadTraces() {
    QTemporaryDir traces, folder;
    QProcess make;
    make.start("/usr/bin/python3", {QStringLiteral(DDPSCOPE_TORCH_BENCH) + "/make_torch_trace_set.py", traces.path(),
                                    "--ranks", "2", "--mb-per-rank", "24"});
    QVERIFY(make.waitForFinished(60000));
    QCOMPARE(make.exitCode(), 0);
    MainWindow window(folder.path());
    window.show();
    QSignalSpy failed(window.part<TraceImportJob>(), &TraceImportJob::failed);
    QSignalSpy progress(window.part<TraceImportJob>(), &TraceImportJob::progress);
    QVERIFY(window.openPath(traces.path()));
    QVERIFY(progress.wait(30000));
    QVERIFY(window.part<QProgressDialog>());
    QPushButton* cancel = window.part<QProgressDialog>()->findChild<QPushButton*>();
    QVERIFY(cancel);
    cancel->click();  // the dialog's Cancel button
    QVERIFY(failed.wait(30000));
    QCOMPARE(failed.first().at(1).toBool(), true);
    QVERIFY(window.statusBar()->currentMessage().contains("cancelled"));
    QVERIFY(!window.currentRun());
    QCOMPARE(QDir(folder.path()).entryList(QDir::Files), QStringList{});
    QVERIFY(window.part<QLabel>("errorBanner")->isHidden());
    // A damaged trace: the banner names the file and the damage.
    QFile bad(traces.filePath("rank1.pt.trace.json"));
    QVERIFY(bad.open(QIODevice::ReadWrite));
    bad.resize(bad.size() / 2);
    bad.close();
    failed.clear();
    QVERIFY(window.openPath(traces.path()));
    QVERIFY(failed.wait(30000));
    QCOMPARE(failed.first().at(1).toBool(), false);
    QVERIFY2(window.part<QLabel>("errorBanner")->text().contains("rank1.pt.trace.json' is truncated"),
             qPrintable(window.part<QLabel>("errorBanner")->text()));
    QCOMPARE(QDir(folder.path()).entryList(QDir::Files), QStringList{});
  }
};

DDPSCOPE_TEST_MAIN(TestTraceImportJob)
#include "tst_trace_import_job.moc"
