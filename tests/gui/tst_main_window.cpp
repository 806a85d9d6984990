// The main window on the offscreen platform: opens a run from a real run file and fills
// its views; a bad file is explained, not thrown through the event loop.
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
    for (int i = 0; i < window.tabs()->count(); ++i)
      window.tabs()->setTabText(i, QString("Onglet %1").arg(i));
    window.showTab("Hang");
    QCOMPARE(window.tabs()->currentIndex(), hang);
    window.showTab("timeline");
    QCOMPARE(window.tabs()->currentIndex(), window.tabIndex("Timeline"));
    QVERIFY(window.tabIsEmpty("hang"));  // no run open
    QCOMPARE(window.tabIndex("nonsense"), -1);
    window.showTab("nonsense");  // stays where it was
    QCOMPARE(window.tabs()->currentIndex(), window.tabIndex("timeline"));
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
    QSignalSpy finished(window.traceImport(), &TraceImportJob::finished);
    QVERIFY(window.openPath(trace));
    QVERIFY(finished.wait(30000));
    QVERIFY(window.currentRun());
    QCOMPARE(window.currentRun()->run.world_size, int64_t{1000000000});
    for (const char* tab : {"Summary", "Ranks", "Messages", "Timeline"})
      window.showTab(tab);
    QVERIFY2(peak() - before < 300 * 1024, qPrintable(QString::number(peak() - before)));
  }

  // A real NCCL job's traces: the Summary's figures are the GPU's, and each of the
  // longest GPU gaps is a link that shows it in the timeline, selected as the range.
  void testGpuGapsAreAClickFromTheTimeline() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QSignalSpy finished(window.traceImport(), &TraceImportJob::finished);
    QVERIFY(window.openPath(QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/hta_nccl_of_128"));
    QVERIFY(finished.wait(60000));
    QVERIFY(window.currentRun());
    const auto& gaps = window.currentRun()->gpu.longest_gaps;
    QVERIFY(gaps.size() >= 2);
    window.showTab("Summary");
    SummaryPage* summary = window.findChild<SummaryPage*>();
    QVERIFY(summary);
    QVERIFY(summary->text().contains("are the <b>GPU's</b>"));
    QVERIFY(summary->text().contains("CPU comm"));
    const auto& g = gaps[1];
    const QString link = QString("gap:%1:%2:%3").arg(g.rank).arg(g.begin_ns).arg(g.end_ns);
    QVERIFY2(summary->text().contains(link), qPrintable(link));
    emit summary->linkActivated(link);
    QCOMPARE(window.tabs()->currentIndex(), window.tabIndex("timeline"));
    QCOMPARE(window.timeline()->rangeBegin(), g.begin_ns);
    QCOMPARE(window.timeline()->rangeEnd(), g.end_ns);
    QVERIFY(window.timeline()->axis().begin_ns <= g.begin_ns && window.timeline()->axis().end_ns >= g.end_ns);
    // The Breakdown and the Ranks tab split the GPU's time, and name the one straggler.
    window.showTab("Breakdown");
    bool gpuHeadline = false;
    for (QLabel* label : window.breakdown()->findChildren<QLabel*>())
      gpuHeadline = gpuHeadline ||
                    (label->text().contains("From the GPU's kernels") && label->text().contains("Straggler: rank 1"));
    QVERIFY(gpuHeadline);
    window.showTab("Ranks");
    auto* metric = window.ranksPage()->findChild<QComboBox*>();
    QVERIFY(metric && metric->findText("GPU computation") >= 0 && metric->findText("forward") < 0);
  }

  void testOpensAFolderOfPyTorchTraces() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QSignalSpy finished(window.traceImport(), &TraceImportJob::finished);
    QSignalSpy progress(window.traceImport(), &TraceImportJob::progress);
    QVERIFY(window.openPath(QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/kineto_cuda_gloo_2"));
    QVERIFY(window.traceImport()->isRunning());
    QVERIFY(finished.wait(30000));
    QVERIFY(!progress.isEmpty());
    const QString runFile = folder.filePath("kineto_cuda_gloo_2.ddprun");
    QCOMPARE(finished.first().first().toString(), runFile);
    QVERIFY(window.currentRun());
    QCOMPARE(QString::fromStdString(window.currentRun()->path), runFile);
    QCOMPARE(window.currentRun()->ranks.size(), size_t{2});
    QCOMPARE(window.currentRun()->run.backend, std::string("gloo"));
    QCOMPARE(window.runList()->rowCount(), 1);  // in the workspace's list
    // GPU streams are timeline tracks with their kernels; the summary has GPU time.
    const TimelineData& t = window.timeline()->data();
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
    QVERIFY(!window.traceImport()->isRunning());
    QCOMPARE(QDir(folder.path()).entryList({"*.ddprun"}), QStringList{"kineto_cuda_gloo_2.ddprun"});
  }

  // Drag and drop: trace files dropped together are one job's ranks.
  void testDroppedTraceFilesAreImported() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.show();
    QSignalSpy finished(window.traceImport(), &TraceImportJob::finished);
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
    QSignalSpy failed(window.traceImport(), &TraceImportJob::failed);
    QSignalSpy progress(window.traceImport(), &TraceImportJob::progress);
    QVERIFY(window.openPath(traces.path()));
    QVERIFY(progress.wait(30000));
    QVERIFY(window.importProgress());
    QPushButton* cancel = window.importProgress()->findChild<QPushButton*>();
    QVERIFY(cancel);
    cancel->click();  // the dialog's Cancel button
    QVERIFY(failed.wait(30000));
    QCOMPARE(failed.first().at(1).toBool(), true);
    QVERIFY(window.statusBar()->currentMessage().contains("cancelled"));
    QVERIFY(!window.currentRun());
    QCOMPARE(QDir(folder.path()).entryList(QDir::Files), QStringList{});
    QVERIFY(window.errorBanner()->isHidden());
    // A damaged trace: the banner names the file and the damage.
    QFile bad(traces.filePath("rank1.pt.trace.json"));
    QVERIFY(bad.open(QIODevice::ReadWrite));
    bad.resize(bad.size() / 2);
    bad.close();
    failed.clear();
    QVERIFY(window.openPath(traces.path()));
    QVERIFY(failed.wait(30000));
    QCOMPARE(failed.first().at(1).toBool(), false);
    QVERIFY2(window.errorBanner()->text().contains("rank1.pt.trace.json' is truncated"),
             qPrintable(window.errorBanner()->text()));
    QCOMPARE(QDir(folder.path()).entryList(QDir::Files), QStringList{});
  }

  void testOpensARunAndFillsTheViews() {
    QTemporaryDir folder;
    const QString file = folder.filePath("job.ddprun");
    testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.show();
    QCOMPARE(window.runList()->rowCount(), 1);
    QVERIFY(window.openRun(file));
    QVERIFY(window.currentRun());
    QCOMPARE(window.tabs()->count(), 12);  // Summary, Live, Timeline, Breakdown, Ranks, ..., Hang, Compare, Learn
    QCOMPARE(window.overlapModel()->rowCount(), 6);  // rank 0's iterations
    QCOMPARE(window.bucketModel()->rowCount(), 2);   // iteration 2 of rank 0
    // A finished run's curves are on the Live tab too: overlap per rank and iteration.
    QCOMPARE(window.monitor()->pointCount("overlap"), 12);
    QVERIFY(window.monitor()->statusLabel()->text().contains("6 iterations recorded"));
    QVERIFY(window.windowTitle().contains("job.ddprun"));

    // The timeline: a lane per rank and thread, zoom with the wheel, click for details.
    TimelineView* timeline = window.timeline();
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
    const int x = TimelineView::kLabelWidth + static_cast<int>(timeline->axis().to_px(2100));
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

  // The send/recv view: one arrow per message between the workers' lifelines, filters,
  // hover and click describing a message.
  // Focus and tab changes never change the open run. The run list's
  // first focus made its first row current, which opened that run instead.
  // Chart axes start at 0 with round ticks, one spike does not
  // flatten the iteration-time chart (it is clipped and counted), and the progress bar
  // of a finished run agrees with the iterations recorded.
  void testLiveChartsReadWell() {
    std::vector<QPointF> points;
    for (int i = 1; i <= 100; ++i)
      points.emplace_back(i, 200 + (i % 7));
    points.emplace_back(101, 25000);
    const AxisFit clipped = fit_axes(points, true);
    QCOMPARE(clipped.clipped, 1);
    QCOMPARE(clipped.max, 25000.0);
    QVERIFY(clipped.y1 > 206 && clipped.y1 < 400);
    const AxisFit whole = fit_axes(points, false);
    QCOMPARE(whole.clipped, 0);
    QVERIFY(whole.y1 >= 25000);

    QTemporaryDir folder;
    // Live, the job's progress lines come every few iterations while the file grows: the
    // status follows the bar (issue 34: "iteration 1 of 40" under a bar at 19 of 40).
    {
      const QString growing = folder.filePath("growing.ddprun");
      {
        ddpscope::probes::RunStoreWriter w(growing.toStdString());
        w.begin_run({R"({"model":"mlp","iters":40})", 1, "mpi", "mlp"});
        testing::write_iterations(w, 0, 1, 19);
      }
      LiveMonitor live;
      live.setProgress(1, 40, 0.5, 1234, true);
      QCOMPARE(live.statusLabel()->text(), QString("iteration 1 of 40 · loss 0.5000 · 1234 samples/s"));
      live.setRun(load_run(growing.toStdString()), /*live=*/true);
      QCOMPARE(live.progressBar()->value(), 19);
      QVERIFY2(live.statusLabel()->text().startsWith("iteration 19 of 40"), qPrintable(live.statusLabel()->text()));
    }
    const QString file = folder.filePath("job.ddprun");
    testing::write_test_run(file.toStdString(), 2, 50);
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    LiveMonitor* m = window.monitor();
    QCOMPARE(m->progressBar()->value(), 50);
    QCOMPARE(m->progressBar()->maximum(), 50);
    QVERIFY(m->statusLabel()->text().contains("50 iterations recorded"));
    for (const QString chart : {"overlap", "iteration"}) {
      QValueAxis* y = m->axis(chart, Qt::Vertical);
      QValueAxis* x = m->axis(chart, Qt::Horizontal);
      QCOMPARE(y->min(), 0.0);
      QCOMPARE(x->min(), 0.0);
      // Round ticks: every tick a whole multiple of the step of 1, 2 or 5 times 10^k.
      const double step = (x->max() - x->min()) / (x->tickCount() - 1);
      const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
      QVERIFY2(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9 ||
                   std::abs(mantissa - 2.5) < 1e-9,
               qPrintable(QString("%1: x %2..%3, %4 ticks; y %5..%6")
                              .arg(chart)
                              .arg(x->min())
                              .arg(x->max())
                              .arg(x->tickCount())
                              .arg(y->min())
                              .arg(y->max())));
    }
  }

  // A mark (here an injected stall) is drawn as a red line through
  // its lane with its name beside it, not as an unlabelled tick.
  void testTimelineLabelsMarks() {
    QTemporaryDir folder;
    const QString file = folder.filePath("marked.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      testing::write_iterations(w, 0, 1, 3);
      ddpscope::probes::EventBatch b;
      b.rank = 0;
      b.threads = {{0, 100, "compute"}};
      b.names = {"injected stall"};
      b.events.push_back(
          {1250, 1250, -1, -1, -1, 2, -1, 0, -1, -1, 0, static_cast<uint8_t>(ddpscope::probes::Kind::Mark), 0});
      w.write(b);
      w.end_run("finished");
    }
    MainWindow window(folder.path());
    window.resize(1400, 900);
    QVERIFY(window.openRun(file));
    window.showTab("Timeline");
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCoreApplication::processEvents();
    TimelineView* timeline = window.timeline();
    timeline->fitAll();
    const QImage image = timeline->grab().toImage();
    const int x = TimelineView::kLabelWidth + static_cast<int>(timeline->axis().to_px(1250));
    const int y = timeline->layout().rowTop(0, 0) + 6;  // rank 0's compute lane, where the label sits
    int red = 0;
    for (int dx = -1; dx <= 1; ++dx)
      red += image.pixelColor(x + dx, y + 6) == QColor(0xc6, 0x28, 0x28) ? 1 : 0;
    QVERIFY2(red >= 1, "no red mark line at the mark's time");
    // The label's box: near-white pixels right of the line, over the spans.
    int light = 0;
    for (int dx = 6; dx < 60; ++dx)
      light += image.pixelColor(x + dx, y).lightness() > 200 ? 1 : 0;
    QVERIFY2(light > 20, qPrintable(QString("label box: %1 light pixels").arg(light)));
    // A click on the mark's line (in forward's row) selects the mark,
    // not the span under it.
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::NoModifier,
                      QPoint(x + 1, timeline->layout().rowTop(0, 1) + TrackLayout::kRowHeight / 2));
    const TimelineSpan* picked = timeline->data().resolve(timeline->selection());
    QVERIFY(picked);
    QCOMPARE(picked->kind, ddpscope::probes::Kind::Mark);
    QCOMPARE(timeline->data().name_of(picked->name), std::string("injected stall"));
    // The ruler names the iteration in view: rank 0's iterations carry their numbers.
    QCOMPARE(timeline->data().iterations.size(), size_t(3));
    for (size_t i = 0; i < 3; ++i)
      QCOMPARE(timeline->data().iterations[i].number, int64_t(i + 1));
  }

  // The charts follow a dark palette (no white panels in a dark app).
  void testChartsFollowADarkPalette() {
    const QPalette saved = QApplication::palette();
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(0x20, 0x20, 0x20));
    dark.setColor(QPalette::WindowText, Qt::white);
    dark.setColor(QPalette::Base, QColor(0x18, 0x18, 0x18));
    dark.setColor(QPalette::Text, Qt::white);
    QApplication::setPalette(dark);
    {
      QTemporaryDir folder;
      testing::write_test_run(folder.filePath("run.ddprun").toStdString(), 2, 4);
      MainWindow window(folder.path());
      QVERIFY(window.openRun(folder.filePath("run.ddprun")));
      window.showTab("Overlap");
      QCOMPARE(window.overlapChart()->chart()->theme(), QChart::ChartThemeDark);
      for (QChartView* v : window.monitor()->findChildren<QChartView*>())
        QCOMPARE(v->chart()->theme(), QChart::ChartThemeDark);
    }
    QApplication::setPalette(saved);
    QTemporaryDir folder;
    testing::write_test_run(folder.filePath("run.ddprun").toStdString(), 2, 4);
    MainWindow window(folder.path());
    QVERIFY(window.openRun(folder.filePath("run.ddprun")));
    window.showTab("Overlap");
    QCOMPARE(window.overlapChart()->chart()->theme(), QChart::ChartThemeLight);
  }

  // Spans and marks are selected and inspected, the keys move
  // the view as Perfetto's do, a drag measures a range, Ctrl+F searches, ranks collapse.
  void testTimelineSelectionKeysRangeAndSearch() {
    QTemporaryDir folder;
    const QString file = folder.filePath("job.ddprun");
    testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.resize(1400, 900);
    QVERIFY(window.openRun(file));
    window.showTab("Timeline");
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCoreApplication::processEvents();
    TimelinePage* page = window.timelinePage();
    TimelineView* view = window.timeline();
    QVERIFY(page->legend()->text().contains("bucket allreduce"));
    QVERIFY(page->legend()->text().contains("forward"));
    view->showIteration(2);  // [2000, 3000]
    QSignalSpy status(view, &TimelineView::spanClicked);

    // A click on forward selects it; the details panel shows its fields.
    auto at = [&](int64_t t, int lane, int row) {
      return QPoint(TimelineView::kLabelWidth + static_cast<int>(view->axis().to_px(t)),
                    view->layout().rowTop(lane, row) + TrackLayout::kRowHeight / 2);
    };
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, at(2100, 0, 1));
    const TimelineSpan* picked = view->data().resolve(view->selection());
    QVERIFY(picked);
    QCOMPARE(view->data().name_of(picked->name), std::string("forward"));
    QTreeWidget* details = page->details();
    QCOMPARE(details->topLevelItem(0)->text(1), QString("forward"));
    QStringList fields;
    for (int i = 0; i < details->topLevelItemCount(); ++i)
      fields << details->topLevelItem(i)->text(0);
    for (const char* f : {"Kind", "Rank", "Thread", "Start", "Duration", "Iteration", "Run-file row", "Parent"})
      QVERIFY2(fields.contains(f), f);
    QVERIFY(status.last().at(0).toString().contains("200 ns"));  // the duration, adaptive
    const QPoint p = view->pointOf(view->selection());
    QVERIFY(p.x() > TimelineView::kLabelWidth);
    // The parent link selects the iteration.
    for (int i = 0; i < details->topLevelItemCount(); ++i) {
      if (details->topLevelItem(i)->text(0) == "Parent") emit details->itemActivated(details->topLevelItem(i), 0);
    }
    QCOMPARE(view->data().resolve(view->selection())->kind, ddpscope::probes::Kind::Iteration);
    // Empty space (below the tracks) clears the selection and the status line.
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, QPoint(600, view->layout().bottom + 20));
    QVERIFY(!view->selection().valid());
    QVERIFY(status.last().at(0).toString().isEmpty());
    QCOMPARE(details->topLevelItem(0)->text(0), QString("Nothing selected"));
    // The bucket-ready tick at 2640 in the compute lane's strip is selectable.
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier,
                      QPoint(TimelineView::kLabelWidth + static_cast<int>(std::lround(view->axis().to_px(2640))),
                             view->layout().stripTop(0) + 3));
    QVERIFY(view->selection().valid());
    QCOMPARE(view->data().resolve(view->selection())->kind, ddpscope::probes::Kind::BucketReady);
    // A bucket allreduce: the same collective on rank 1 is a click away.
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, at(2400, 1, 0));
    QCOMPARE(view->data().resolve(view->selection())->kind, ddpscope::probes::Kind::Allreduce);
    const int64_t seq = view->data().resolve(view->selection())->seq;
    QTreeWidgetItem* others = nullptr;
    for (int i = 0; i < details->topLevelItemCount(); ++i)
      if (details->topLevelItem(i)->text(0) == "On other ranks") others = details->topLevelItem(i);
    QVERIFY(others);
    QCOMPARE(others->childCount(), 1);
    emit details->itemActivated(others->child(0), 0);
    QCOMPARE(view->data().lanes[static_cast<size_t>(view->selection().lane)].rank, 1);
    QCOMPARE(view->data().resolve(view->selection())->seq, seq);

    // Keys: W and S zoom around the centre by 1.5, A and D pan a fifth of the view, F fits.
    view->setFocus();
    view->showIteration(2);
    auto window_ns = [&] { return double(view->axis().end_ns - view->axis().begin_ns); };
    auto centre_ns = [&] { return (view->axis().begin_ns + view->axis().end_ns) / 2.0; };
    double w0 = window_ns(), c0 = centre_ns();
    QTest::keyClick(view, Qt::Key_W);
    QVERIFY(std::abs(window_ns() - w0 / 1.5) < w0 * 0.01);
    QVERIFY(std::abs(centre_ns() - c0) < w0 * 0.01);
    QTest::keyClick(view, Qt::Key_S);
    QVERIFY(std::abs(window_ns() - w0) < w0 * 0.01);
    const int64_t left = view->axis().begin_ns;
    QTest::keyClick(view, Qt::Key_D);
    QVERIFY(std::abs(double(view->axis().begin_ns - left) - w0 / 5) < w0 * 0.01);
    QTest::keyClick(view, Qt::Key_A);
    QTest::keyClick(view, Qt::Key_A);
    QVERIFY(std::abs(double(left - view->axis().begin_ns) - w0 / 5) < w0 * 0.01);
    QTest::keyClick(view, Qt::Key_F);
    QVERIFY(view->axis().begin_ns <= view->data().begin_ns && view->axis().end_ns >= view->data().end_ns);
    QTest::keyClick(view, Qt::Key_Escape);
    QVERIFY(!view->selection().valid());

    // A drag selects a range: its summary table and its duration.
    view->showIteration(2);
    const QPoint from = at(2100, 0, 0), to = at(2600, 0, 0);
    QTest::mousePress(view, Qt::LeftButton, Qt::NoModifier, from);
    QMouseEvent move(QEvent::MouseMove, QPointF(to), view->mapToGlobal(QPointF(to)), Qt::NoButton, Qt::LeftButton,
                     Qt::NoModifier);
    QApplication::sendEvent(view, &move);
    QTest::mouseRelease(view, Qt::LeftButton, Qt::NoModifier, to);
    QVERIFY(view->rangeEnd() > view->rangeBegin());
    QVERIFY(std::abs(view->rangeBegin() - 2100) <= 3 && std::abs(view->rangeEnd() - 2600) <= 3);
    QVERIFY(page->rangeModel()->rowCount() >= 4);  // iteration, forward, backward, allreduce
    QVERIFY(page->rangeHeader()->text().contains("ns"));
    QVERIFY(page->rangeTable()->isSortingEnabled());
    page->rangeTable()->sortByColumn(0, Qt::AscendingOrder);
    QCOMPARE(page->rangeTable()->model()->index(0, 0).data().toString(), QString("allreduce"));

    // Ctrl+F opens the search bar; Enter finds the next finalize, Shift+Enter the previous.
    QTest::keyClick(view, Qt::Key_F, Qt::ControlModifier);
    QVERIFY(page->searchBar()->isVisible());
    QTest::keyClicks(page->searchField(), "finalize");
    QTest::keyClick(page->searchField(), Qt::Key_Return);
    QCOMPARE(page->searchResults().matches.size(), size_t(12));
    const int first = page->currentMatch();
    QVERIFY(first >= 0);
    QCOMPARE(view->data().name_of(view->data().resolve(view->selection())->name), std::string("finalize"));
    QTest::keyClick(page->searchField(), Qt::Key_Return);
    QCOMPARE(page->currentMatch(), first + 1);
    QTest::keyClick(page->searchField(), Qt::Key_Return, Qt::ShiftModifier);
    QCOMPARE(page->currentMatch(), first);
    QVERIFY(page->searchStatus()->text().contains("of 12"));
    QTest::keyClick(page->searchField(), Qt::Key_Escape);
    QVERIFY(!page->searchBar()->isVisible());
    view->setFocus();
    QTest::keyClick(view, Qt::Key_Slash);
    QVERIFY(page->searchBar()->isVisible());

    // A click on rank 0's header collapses it; another expands it.
    const int header = view->layout().rows[0].y + 5;
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, QPoint(20, header));
    QVERIFY(view->rankCollapsed(0));
    QCOMPARE(view->layout().lane_row[0], -1);
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, QPoint(20, header));
    QVERIFY(!view->rankCollapsed(0));
    QVERIFY(view->layout().lane_row[0] >= 0);
  }

  // The Breakdown tab says where the time went, every rank side by
  // side, the straggler marked, tables sortable.
  void testBreakdownTabNamesTheStraggler() {
    QTemporaryDir folder;
    const QString file = folder.filePath("lag.ddprun");
    testing::write_test_run(file.toStdString(), 3, 6, "finished", 150);  // rank 2 lags
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    window.showTab("Breakdown");
    TimeBreakdownPage* page = window.breakdown();
    QCOMPARE(page->bars()->rows().size(), size_t(3));
    QVERIFY2(page->headline()->text().contains("Straggler: rank 2"), qPrintable(page->headline()->text()));
    QCOMPARE(page->rankModel()->rowCount(), 3);
    QVERIFY(page->rankTable()->isSortingEnabled() && page->opsTable()->isSortingEnabled());
    QVERIFY(page->opsModel()->rowCount() >= 5);
    // One iteration: its rows, rank 2 still the straggler there.
    page->iterationChoice()->setCurrentIndex(page->iterationChoice()->findText("Iteration 3"));
    QCOMPARE(page->bars()->rows().size(), size_t(3));
    for (const auto& r : page->bars()->rows())
      QCOMPARE(r.iteration, int64_t(3));
    QVERIFY(page->headline()->text().contains("in iteration 3"));
    QVERIFY(page->headline()->text().contains("Straggler: rank 2"));
    // Sorting by exposed communication puts the rank that waits most first (by value,
    // not by the text "60 ns" < "9 ns").
    page->rankTable()->sortByColumn(4, Qt::DescendingOrder);
    const auto* sorted = page->rankTable()->model();
    for (int r = 1; r < sorted->rowCount(); ++r)
      QVERIFY(sorted->index(r - 1, 4).data(kSortRole).toDouble() >= sorted->index(r, 4).data(kSortRole).toDouble());
    page->rankTable()->sortByColumn(0, Qt::DescendingOrder);
    QCOMPARE(sorted->index(0, 0).data().toString(), QString("2"));
  }

  // A log scale shows every iteration time, the 25 s stall and the
  // ordinary ones, nothing clipped; defect 8: the Overlap chart's legend has the
  // straggler's colour, its x-axis numbers iterations even for many, and a bar click
  // shows that iteration in the timeline.
  void testLogScaleAndOverlapChart() {
    using namespace ddpscope::probes;
    QTemporaryDir folder;
    const QString file = folder.filePath("spike.ddprun");
    {
      RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      for (int rank = 0; rank < 2; ++rank)
        testing::write_iterations(w, rank, 1, 60, rank == 1 ? 150 : 0);
      EventBatch b;
      b.rank = 0;
      for (int i = 1; i <= 60; ++i) {
        const double ms = i == 30 ? 25000.0 : 40.0 + i % 5;
        b.records.push_back(
            nlohmann::json{{"type", "metric"}, {"iteration", i}, {"name", "iteration_ms"}, {"value", ms}}.dump());
      }
      w.write(b);
      w.end_run("finished");
    }
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    LiveMonitor* m = window.monitor();
    QCOMPARE(m->pointCount("iteration"), 60);
    QVERIFY(m->axis("iteration", Qt::Vertical)->max() < 25000);  // clipped on a linear scale
    m->logScaleBox()->setChecked(true);
    QVERIFY(m->logScale());
    QVERIFY(m->logAxis());
    QVERIFY(m->logAxis()->min() <= 40 && m->logAxis()->max() >= 25000);
    QVERIFY(!m->monitorTitle("iteration").contains("above the axis"));
    m->logScaleBox()->setChecked(false);
    QVERIFY(m->axis("iteration", Qt::Vertical)->max() < 25000);
    QVERIFY(m->monitorTitle("iteration").contains("above the axis"));

    window.showTab("Overlap");
    QChart* chart = window.overlapChart()->chart();
    QStringList legend;
    for (auto* marker : chart->legend()->markers())
      legend << marker->label();
    QVERIFY2(legend.join(",").contains("straggler"), qPrintable(legend.join(",")));
    auto* x = qobject_cast<QCategoryAxis*>(chart->axes(Qt::Horizontal).first());
    QVERIFY(x);  // 60 bars: every k-th iteration labelled, on its bar
    QVERIFY(x->categoriesLabels().size() >= 5 && x->categoriesLabels().size() <= 30);
    QVERIFY(x->categoriesLabels().contains("10"));
    auto* series = qobject_cast<QAbstractBarSeries*>(chart->series().first());
    emit series->clicked(29, series->barSets().first());  // iteration 30
    QCOMPARE(window.tabs()->tabText(window.tabs()->currentIndex()), QString("Timeline"));
    QVERIFY(window.timeline()->axis().begin_ns <= 29000 && window.timeline()->axis().end_ns >= 30000);
    QVERIFY(window.timeline()->axis().end_ns - window.timeline()->axis().begin_ns < 2000);
  }

  // View and Help menus; Help ▸ Keyboard shortcuts lists the keys the
  // timeline answers to (tested above: W/A/S/D, F, Esc, Ctrl+F, /).
  void testHelpAndViewMenus() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    // Empty states say why and what to do, rather than blank axes.
    for (const char* tab : {"Overlap", "Buckets", "Graph", "Messages", "Hang"})
      QVERIFY2(window.tabIsEmpty(tab), tab);
    testing::write_seed_graphs(folder.filePath("rpc.ddprun").toStdString());
    QVERIFY(window.openRun(folder.filePath("rpc.ddprun")));
    QVERIFY(window.tabIsEmpty("Overlap"));  // an RPC run: no DDP iterations
    QVERIFY(!window.tabIsEmpty("Graph"));
    QVERIFY(!window.tabIsEmpty("Hang"));
    testing::write_test_run(folder.filePath("ddp.ddprun").toStdString(), 2, 3);
    QVERIFY(window.openRun(folder.filePath("ddp.ddprun")));
    QVERIFY(!window.tabIsEmpty("Overlap"));
    QVERIFY(!window.tabIsEmpty("Buckets"));
    QVERIFY(window.tabIsEmpty("Messages"));  // DDP: no RPC messages
    QStringList menus;
    for (QAction* a : window.menuBar()->actions())
      menus << a->text().remove('&');
    QVERIFY2(menus.contains("View") && menus.contains("Help"), qPrintable(menus.join(",")));
    QVERIFY(window.shortcutsAction());
    ShortcutsDialog dialog;
    QStringList keys;
    for (int r = 0; r < dialog.table()->rowCount(); ++r)
      keys << dialog.table()->item(r, 0)->text();
    for (const char* k : {"W  or  +", "S  or  −", "A  or  ←", "D  or  →", "F", "Esc", "Ctrl+F  or  /", "Drag"})
      QVERIFY2(keys.contains(k), k);
    QVERIFY(dialog.table()->isSortingEnabled());
  }

  // The Buckets tab draws the advice curve of the open run, its own cap marked;
  // a run without gradient-ready marks says why there is none.
  void testBucketsTabDrawsTheAdviceCurve() {
    using namespace ddpscope::probes;
    QTemporaryDir folder;
    const QString file = folder.filePath("advice.ddprun");
    {
      RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"model":"mlp","bucket_cap_mb":4})", 2, "mpi", "mlp"});
      for (int rank = 0; rank < 2; ++rank) {
        testing::write_iterations(w, rank, 1, 12);
        // Gradient-ready marks (w at 400, b at 640 into each iteration) and the process
        // group's allreduces (bucket 0 during backward, bucket 1 after it).
        EventBatch b;
        b.rank = rank;
        b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
        b.names = {"grad_ready", "allreduce"};
        for (int it = 1; it <= 12; ++it) {
          const int64_t o = 1000 * int64_t{it - 1};
          b.events.push_back(
              BatchEvent{o + 290, o + 290, -1, -1, -1, it, 0, 0, -1, -1, 0, uint8_t(Kind::GradReady), 0});
          b.events.push_back(
              BatchEvent{o + 640, o + 640, -1, -1, -1, it, 1, 0, -1, -1, 0, uint8_t(Kind::GradReady), 0});
          b.events.push_back(
              BatchEvent{o + 300, o + 500, 4096, 2 * it, -1, it, -1, 1, -1, -1, 1, uint8_t(Kind::PgOp), 0});
          b.events.push_back(
              BatchEvent{o + 710, o + 760, 128, 2 * it + 1, -1, it, -1, 1, -1, -1, 1, uint8_t(Kind::PgOp), 0});
        }
        w.write(b);
      }
      w.end_run("finished");
    }
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    window.showTab("Buckets");
    BucketAdviceView* advice = window.bucketAdvice();
    QVERIFY2(advice->hasAdvice(), qPrintable(advice->title()));
    QCOMPARE(advice->advice().iterations, 7);  // 12 less the 5 of warm-up
    QCOMPARE(advice->advice().recorded_cap_mb, 4.0);
    // Every cap ties here: the advice keeps the run's own (issue 34: it named a "best"
    // predicted slower than the recorded cap).
    QCOMPARE(advice->advice().best_cap_mb, 4.0);
    QVERIFY2(advice->title().contains("keep this run's cap (4 MiB)"), qPrintable(advice->title()));
    QVERIFY2(advice->title().contains("median 0.0 ms over its 7 iterations after the warm-up"),
             qPrintable(advice->title()));
    QVERIFY(advice->title().contains("with --fused-optimizer"));
    QCOMPARE(advice->chart()->series().size(), 4);  // predicted, fused, this run, the best
    int recorded = 0;
    for (const auto& p : advice->advice().predictions) {
      QVERIFY(p.iteration_ms > 0);
      if (p.recorded) {
        ++recorded;
        QVERIFY(std::abs(p.measured_ms - 1000e-6) < 1e-9);         // the test run's 1000 ns iterations
        QVERIFY(std::abs(p.iteration_ms - p.measured_ms) < 1e-9);  // the curve is anchored on the run
      }
    }
    QCOMPARE(recorded, 1);
    // Two gradients, both in one bucket at every cap from 0.25 MiB: the cap cannot matter.
    QVERIFY(std::any_of(advice->advice().notes.begin(), advice->advice().notes.end(),
                        [](const std::string& n) { return n.find("the cap hardly matters") != std::string::npos; }));
    testing::write_test_run(folder.filePath("plain.ddprun").toStdString(), 2, 8);
    QVERIFY(window.openRun(folder.filePath("plain.ddprun")));
    window.showTab("Buckets");
    QVERIFY(!advice->hasAdvice());
    QVERIFY(advice->title().contains("No bucket advice"));
  }

  void testOpenRunStaysOpenThroughFocusAndTabs() {
    QTemporaryDir folder;
    testing::write_test_run(folder.filePath("one.ddprun").toStdString(), 2, 3);
    testing::write_test_run(folder.filePath("two.ddprun").toStdString(), 2, 6);
    MainWindow window(folder.path());
    QCOMPARE(window.runList()->rowCount(), 2);
    // The run the user opens (as `ddpscope FILE` does, before the window shows) is the
    // list's second row: the first focus made the first row current.
    const QString first = window.runList()->index(0, 0).data(RunListModel::PathRole).toString();
    const QString mine = window.runList()->index(1, 0).data(RunListModel::PathRole).toString();
    QVERIFY(window.openRun(mine));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const auto open_path = [&] { return QString::fromStdString(window.currentRun()->path); };
    QCOMPARE(open_path(), mine);
    auto* list = window.findChild<QTableView*>();  // the run list is the first table view
    QVERIFY(list && static_cast<QSortFilterProxyModel*>(list->model())->sourceModel() == window.runList());
    QApplication::setActiveWindow(&window);
    list->setFocus(Qt::TabFocusReason);
    QFocusEvent focus_in(QEvent::FocusIn, Qt::TabFocusReason);
    QApplication::sendEvent(list, &focus_in);
    QApplication::processEvents();
    QCOMPARE(open_path(), mine);
    for (int tab = 0; tab < window.tabs()->count(); ++tab) {
      window.tabs()->setCurrentIndex(tab);
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

  // The run list, File > Open and drops read a run off the UI thread: the call returns
  // at once with a busy indicator shown, the run appears when read, the last request
  // wins, and a failure is explained with the open run kept.
  void testRunsOpenOffTheUiThread() {
    QTemporaryDir folder;
    const QString small = folder.filePath("small.ddprun");
    const QString large = folder.filePath("large.ddprun");
    testing::write_test_run(small.toStdString(), 2, 3);
    testing::write_test_run(large.toStdString(), 4, 400);
    MainWindow window(folder.path());
    window.show();
    QSignalSpy shown(&window, &MainWindow::runShown);
    window.openRunInBackground(large);
    QVERIFY(window.runOpener()->isBusy());
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
    QTRY_VERIFY(!window.runOpener()->isBusy());
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

  void testMessagesTabDrawsTheSendRecvPairs() {
    QTemporaryDir folder;
    const QString file = folder.filePath("rpc.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"job":"example"})", 2, "mpi", "example"});
      testing::write_messages(w,
                              {{0, 1, 1000, 1100, 1, -1, 1, "add", 210},
                               {1, 0, 1200, 1300, 1, -1, 2, "add", 132},
                               {0, 1, 2000, 2100, 2, 7, 1, "_ddpscope.dist_backward", 204},
                               {1, 0, 2200, 2300, 2, 7, 2, "_ddpscope.dist_backward", 96},
                               {0, 1, 3000, -1, 5, -1, 1, "sleep_ms", 120}},
                              2);
      w.end_run("finished");
    }
    MainWindow window(folder.path());
    window.resize(1200, 700);
    window.show();
    QVERIFY(window.openRun(file));
    window.showTab("Messages");
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCoreApplication::processEvents();
    MessagesPage* page = window.messagesPage();
    SequenceView* view = page->view();
    QCOMPARE(view->data().arrows.size(), size_t{5});
    view->fitAll();
    QVERIFY(!view->grab().isNull());  // paints
    QCOMPARE(view->drawnArrows(), int64_t{5});
    // Context 0:7 is offered with its workers.
    QCOMPARE(page->contextBox()->count(), 3);  // all, outside contexts, 0:7
    QVERIFY2(page->contextBox()->itemText(2).contains("0:7 (workers 0, 1)"),
             qPrintable(page->contextBox()->itemText(2)));
    page->contextBox()->setCurrentIndex(2);
    (void)view->grab();
    QCOMPARE(view->drawnArrows(), int64_t{2});
    page->contextBox()->setCurrentIndex(0);
    page->kindBox(ArrowKind::Request)->setChecked(false);  // the add call and sleep_ms go
    (void)view->grab();
    QCOMPARE(view->drawnArrows(), int64_t{3});
    page->kindBox(ArrowKind::Request)->setChecked(true);
    // A click on the middle of the first arrow (worker 0 -> worker 1, 1000 -> 1100) selects it.
    const double x = SequenceView::kLabelWidth + (view->axis().to_px(1000) + view->axis().to_px(1100)) / 2;
    const int y = (view->laneY(0) + view->laneY(1)) / 2;
    QCOMPARE(view->arrowAt(QPointF(x, y)), 0);
    QSignalSpy selected(view, &SequenceView::arrowSelected);
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, QPoint(static_cast<int>(x), y));
    QCOMPARE(selected.count(), 1);
    QVERIFY2(selected.at(0).at(0).toString().contains("call of 'add' from worker 0 to worker 1"),
             qPrintable(selected.at(0).at(0).toString()));
    QCOMPARE(selected.at(0).at(2).toLongLong(), qint64{1000});
    QCOMPARE(selected.at(0).at(4).toLongLong(), qint64{1100});
    QCOMPARE(view->selected(), 0);
    // ... and in the timeline, where the message is a flow between the two ranks' lanes.
    TimelineView* timeline = window.timeline();
    QVERIFY(timeline->selectedFlow() >= 0);
    const TimelineFlow& flow = timeline->data().flows[static_cast<size_t>(timeline->selectedFlow())];
    QCOMPARE(flow.from_ns, int64_t{1000});
    QCOMPARE(flow.to_ns, int64_t{1100});
    QCOMPARE(timeline->data().lanes[flow.from_lane].rank, 0);
    QCOMPARE(timeline->data().lanes[flow.to_lane].rank, 1);
    QVERIFY(timeline->axis().begin_ns <= 1000 && timeline->axis().end_ns >= 1100);
    QCOMPARE(timeline->data().flows.size(), size_t{4});  // the in-flight call has no flow yet
    // Issue 34, point 9: one clock on both tabs (the ruler's zero is the run's start), and
    // the timeline's Details show the message the status bar says is selected there.
    QCOMPARE(view->data().origin(), timeline->data().begin_ns);
    const QString sentAt = QString::fromStdString(format_duration(1000 - timeline->data().begin_ns));
    QVERIFY2(selected.at(0).at(0).toString().contains("sent at " + sentAt),
             qPrintable(selected.at(0).at(0).toString()));
    QTreeWidget* details = window.timelinePage()->details();
    QStringList shown;
    for (int i = 0; i < details->topLevelItemCount(); ++i)
      shown << details->topLevelItem(i)->text(0) + ": " + details->topLevelItem(i)->text(1);
    QVERIFY2(shown.join('\n').contains("Sent: rank 0") && shown.join('\n').contains("at " + sentAt) &&
                 shown.join('\n').contains("call of 'add'") && !shown.join('\n').contains("Nothing selected"),
             qPrintable(shown.join('\n')));
    // A span selected after it: the message is no longer the selection.
    timeline->select({0, 0, SpanRef::In::Spans});
    QCOMPARE(timeline->selectedFlow(), -1);
    // Far from every arrow: nothing.
    QCOMPARE(view->arrowAt(QPointF(SequenceView::kLabelWidth + 2, view->laneY(1) + 30)), -1);
  }

  // The Graph tab lists each distributed pass with its workers and draws it as one
  // cluster per worker, joined by the send/recv pairs.
  void testGraphTabShowsADistributedPass() {
    QTemporaryDir folder;
    const QString file = folder.filePath("seed.ddprun");
    testing::write_seed_graphs(file.toStdString());
    MainWindow window(folder.path());
    window.resize(1200, 800);
    window.show();
    QVERIFY(window.openRun(file));
    window.showTab("Graph");
    QCoreApplication::processEvents();
    QComboBox* choice = window.graphChoice();
    QCOMPARE(choice->count(), 1);  // no local graph: only the pass
    QCOMPARE(choice->itemText(0), QString("context 0:1 · pass 0:1 · workers 0, 1"));
    GraphView* graph = window.graphView();
    QVERIFY(graph->shown().distributed);
    QCOMPARE(graph->shown().nodes.size(), size_t{11});
    QVERIFY2(graph->layoutError().isEmpty(), qPrintable(graph->layoutError()));
    // A click on worker 1's AddBackward says where it ran and for how long.
    size_t add = 0;
    for (size_t i = 0; i < graph->shown().nodes.size(); ++i)
      if (graph->shown().nodes[i].op == "AddBackward") add = i;
    QSignalSpy clicked(graph, &GraphView::nodeClicked);
    graph->centerOn(graph->nodeCenter(add));
    QTest::mouseClick(graph->viewport(), Qt::LeftButton, Qt::NoModifier, graph->mapFromScene(graph->nodeCenter(add)));
    QCOMPARE(clicked.count(), 1);
    QVERIFY2(clicked.at(0).at(0).toString().startsWith("worker 1: AddBackward") &&
                 clicked.at(0).at(0).toString().contains("0.002 ms in pass 0:1"),
             qPrintable(clicked.at(0).at(0).toString()));
  }

  // What the Learn tab shows at a step: the sentence, the lists and every node's label
  // and colour.
  static QStringList snapshot(LearnPage* page) {
    QStringList s{page->explanation()->text()};
    for (QListWidget* list : {page->autogradView()->inFlightList(), page->autogradView()->gradientList()})
      for (int i = 0; i < list->count(); ++i)
        s << list->item(i)->text();
    for (QGraphicsItem* item : page->graph()->scene()->items()) {
      if (auto* text = dynamic_cast<QGraphicsTextItem*>(item)) s << text->toPlainText();
      if (auto* box = dynamic_cast<QGraphicsRectItem*>(item))
        s << box->brush().color().name() + box->pen().color().name() + QString::number(box->pen().widthF());
    }
    return s;
  }

  // Learn > lesson 1 replays seed 000's example from its shipped recording; the keyboard
  // steps it, and stepping back restores exactly what was shown.
  void testLearnTabStepsThroughALesson() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.resize(1300, 850);
    window.show();
    QVERIFY(window.openLesson(0));
    QCOMPARE(window.tabs()->tabText(window.tabs()->currentIndex()), QString("Learn"));
    LearnPage* page = window.learnPage();
    const size_t steps = page->lesson().steps.size();
    QVERIFY(steps > 20);
    QCOMPARE(page->applied(), size_t{0});
    for (int i = 0; i < 5; ++i)
      QTest::keyClick(page, Qt::Key_Right);
    QCOMPARE(page->applied(), size_t{5});
    QTest::keyClick(page, Qt::Key_Left);
    QTest::keyClick(page, Qt::Key_Left);
    QCOMPARE(page->applied(), size_t{3});
    QCOMPARE(page->explanation()->text(), QString::fromStdString(page->lesson().explain(2)));
    const QStringList at3 = snapshot(page);
    for (int i = 0; i < 15; ++i)
      QTest::keyClick(page, Qt::Key_Right);
    QVERIFY(snapshot(page) != at3);
    for (int i = 0; i < 15; ++i)
      QTest::keyClick(page, Qt::Key_Left);
    QCOMPARE(snapshot(page), at3);
    QTest::keyClick(page, Qt::Key_End);
    QCOMPARE(page->applied(), steps);
    // t1, t2 and t4's gradients were in the context until both workers released it.
    QCOMPARE(page->autogradView()->gradientList()->count(), 2);
    QVERIFY(page->autogradView()->gradientList()->item(0)->text().contains("context released"));
    QCOMPARE(page->autogradView()->inFlightList()->count(), 0);
    QTest::keyClick(page, Qt::Key_Home);
    QCOMPARE(page->applied(), size_t{0});
    QTest::keyClick(page, Qt::Key_Space);
    QVERIFY(page->isPlaying());
    page->setStepsPerSecond(200);
    QTRY_COMPARE_WITH_TIMEOUT(page->applied(), steps, 5000);  // plays to the end, then stops
    QTRY_VERIFY(!page->isPlaying());

    // Lesson 3 (DDP): the buckets instead of messages; at the end every one is reduced.
    QVERIFY(window.openLesson(3));
    QVERIFY(page->lesson().ddp);
    QVERIFY(page->bucketLessonView()->bucketView()->isVisibleTo(page) &&
            !page->autogradView()->sequence()->isVisibleTo(page));
    QVERIFY(page->bucketLessonView()->bucketCapBox()->isVisibleTo(page) &&
            !page->autogradView()->modeBox()->isVisibleTo(page));
    QTest::keyClick(page, Qt::Key_End);
    QCOMPARE(page->bucketLessonView()->bucketView()->buckets().size(), size_t{3});
    for (const BucketFill& b : page->bucketLessonView()->bucketView()->buckets())
      QCOMPARE(static_cast<int>(b.phase), static_cast<int>(BucketFill::Phase::Reduced));
  }

  // Lesson 2 side by side: FAST (failing) and SMART (completing) on the same graph,
  // stepped together.
  void testLearnTabSideBySide() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.resize(1300, 900);
    window.show();
    QVERIFY(window.openLesson(1));  // 2a: FAST
    LearnPage* page = window.learnPage();
    QVERIFY(page->sideBySideBox()->isEnabled());
    page->sideBySideBox()->setChecked(true);
    QVERIFY(!page->autogradView()->compared().steps.empty());
    QVERIFY(std::any_of(page->autogradView()->compared().steps.begin(), page->autogradView()->compared().steps.end(),
                        [](const LessonStep& s) { return s.kind == StepKind::SmartAsk; }));
    QVERIFY(page->autogradView()->compareGraph()->isVisibleTo(page));
    QCOMPARE(page->autogradView()->compareGraph()->shown().nodes.size(),
             page->autogradView()->compared().graph.nodes.size());
    QTest::keyClick(page, Qt::Key_Right);
    QVERIFY2(page->autogradView()->compareExplanation()->text().contains("step 1 of"),
             qPrintable(page->autogradView()->compareExplanation()->text()));
    QTest::keyClick(page, Qt::Key_End);
    QVERIFY(page->explanation()->text().contains("never received gradients"));  // FAST's error
    // Lesson 1 has no pair: the box is off and disabled.
    QVERIFY(window.openLesson(0));
    QVERIFY(!page->sideBySideBox()->isEnabled() && !page->sideBySideBox()->isChecked());
  }

  // Predict mode stops before each node runs; a click on the right node reveals it and
  // scores, a wrong one says why and costs the point.
  void testLearnTabPredictMode() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.resize(1300, 850);
    window.show();
    QVERIFY(window.openLesson(0));
    LearnPage* page = window.learnPage();
    page->predictBox()->setChecked(true);
    const Lesson& l = page->lesson();
    const size_t first = l.next_node_step(0);
    QVERIFY(first < l.steps.size());
    while (page->applied() < first)
      page->stepForward();
    page->stepForward();  // asks instead of revealing
    QVERIFY(page->isAskingPrediction());
    QCOMPARE(page->applied(), first);
    QVERIFY(page->explanation()->text().contains("Which node runs next"));
    const int right = l.steps[first].node;
    const int wrong = right == 0 ? 1 : 0;
    QSignalSpy status(page, &LearnPage::statusMessage);
    emit page->graph()->nodeIndexClicked(wrong);
    QVERIFY(page->isAskingPrediction());
    QVERIFY2(status.last().at(0).toString().startsWith("Not "), qPrintable(status.last().at(0).toString()));
    emit page->graph()->nodeIndexClicked(right);
    QVERIFY(!page->isAskingPrediction());
    QCOMPARE(page->applied(), first + 1);
    QCOMPARE(page->score(), 0);
    QCOMPARE(page->predictions(), 1);
    // The next node: guessed right at once.
    const size_t second = l.next_node_step(first + 1);
    while (page->applied() < second)
      page->stepForward();
    page->stepForward();
    QVERIFY(page->isAskingPrediction());
    emit page->graph()->nodeIndexClicked(l.steps[second].node);
    QCOMPARE(page->score(), 1);
    QCOMPARE(page->predictions(), 2);
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
    QVERIFY2(window.hangView()->headline().contains("failed"), qPrintable(window.hangView()->headline()));
    QCOMPARE(window.hangView()->table()->rowCount(), 2);
  }

  // Reopened, the launch dialog shows the last launched job's values.
  void testLaunchDialogRemembersTheLastJob() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    {
      LaunchDialog fresh;
      QCOMPARE(fresh.config().worldSize, LaunchConfig{}.worldSize);
      fresh.worldSizeBox()->setValue(3);
      fresh.extraArgumentsEdit()->setText("--lr 0.01");
      QPushButton* launch = nullptr;
      for (QPushButton* b : fresh.findChildren<QPushButton*>())
        if (b->text() == "Launch") launch = b;
      QVERIFY(launch);
      launch->click();
      QCOMPARE(fresh.result(), int(QDialog::Accepted));
    }
    LaunchDialog reopened;
    QCOMPARE(reopened.config().worldSize, 3);
    QCOMPARE(reopened.config().extraArguments, QString("--lr 0.01"));
    LaunchDialog cancelled;  // a cancelled dialog changes nothing
    cancelled.worldSizeBox()->setValue(4);
    cancelled.reject();
    QCOMPARE(LaunchDialog().config().worldSize, 3);
  }

  // "PyTorch script" shows the script's rows and hides the model's; its problems are
  // named there, and a good script can be launched.
  void testLaunchDialogOffersAPyTorchScript() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    LaunchDialog dialog;
    dialog.show();
    QVERIFY(dialog.rowShown("model") && !dialog.rowShown("script"));
    dialog.jobBox()->setCurrentIndex(dialog.jobBox()->findData("torch"));
    QVERIFY(dialog.rowShown("script") && dialog.rowShown("python") && dialog.rowShown("script_arguments"));
    QVERIFY(!dialog.rowShown("model") && !dialog.rowShown("bucket_cap_mb") && !dialog.rowShown("iterations"));
    QVERIFY(dialog.rowShown("world_size") && dialog.rowShown("hostfile"));
    QVERIFY(!dialog.canLaunch());
    QVERIFY(dialog.errorText("script").contains("the training script"));
    QCOMPARE(dialog.pythonEdit()->text(), defaultPython());
    QTemporaryDir folder;
    QFile script(folder.filePath("train.py"));
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write("import torch\n");
    script.close();
    dialog.scriptEdit()->setText(script.fileName());
    QVERIFY2(dialog.canLaunch(), qPrintable(dialog.errorText("script") + dialog.errorText("python")));
    dialog.pythonEdit()->setText("/no/python3");
    QVERIFY(dialog.errorText("python").contains("python with torch"));
    QCOMPARE(dialog.config().job, QString("torch"));
  }

  void testLaunchDialogExplainsBadInputAndKeepsPresets() {
    QTemporaryDir folder;
    LaunchDialog dialog;
    QVERIFY(dialog.canLaunch());
    QVERIFY(dialog.errorText("world_size").isEmpty());
    dialog.worldSizeBox()->setValue(0);
    QVERIFY(!dialog.canLaunch());
    QVERIFY(dialog.errorText("world_size").contains("between 1 and"));
    dialog.worldSizeBox()->setValue(2);
    dialog.hostfileEdit()->setText("/no/such/hostfile");
    QVERIFY(dialog.errorText("hostfile").contains("no such file"));
    QVERIFY(!dialog.canLaunch());
    dialog.hostfileEdit()->clear();
    dialog.modelBox()->setCurrentText("transformer");
    dialog.widthBox()->setValue(30);
    QVERIFY(dialog.errorText("width").contains("divisible"));
    dialog.widthBox()->setValue(32);
    dialog.extraArgumentsEdit()->setText("--out /tmp/x");
    QVERIFY(dialog.errorText("extra_arguments").contains("--out"));
    dialog.extraArgumentsEdit()->setText("--lr 0.01");
    QVERIFY(dialog.canLaunch());
    // The Launch button follows validity.
    QPushButton* launch = nullptr;
    for (auto* b : dialog.findChildren<QPushButton*>()) {
      if (b->text() == "Launch") launch = b;
    }
    QVERIFY(launch && launch->isEnabled());
    dialog.worldSizeBox()->setValue(0);
    QVERIFY(!launch->isEnabled());
    dialog.worldSizeBox()->setValue(3);

    const QString preset = folder.filePath("p.json");
    QVERIFY(dialog.savePresetTo(preset));
    LaunchDialog other;
    QVERIFY(other.loadPresetFrom(preset));
    QCOMPARE(toJson(other.config()), toJson(dialog.config()));
    QCOMPARE(other.config().worldSize, 3);
    QCOMPARE(other.config().model, QString("transformer"));
    QFile bad(folder.filePath("bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("[1, 2]");
    bad.close();
    QVERIFY(!other.loadPresetFrom(bad.fileName()));
    QCOMPARE(other.config().worldSize, 3);  // unchanged
  }

  // Extra arguments the fields cannot check are checked by ddpscope-cli when Launch is
  // pressed (issue 34 point 6): the dialog stays open with the CLI's words beside them.
  void testLaunchDialogAsksTheCliBeforeClosing() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    QTemporaryDir folder;
    JobController job(nullptr, DDPSCOPE_CLI_PATH);
    LaunchDialog dialog;
    dialog.setLaunchCheck(
        [&](const LaunchConfig& c) { return job.checkArguments(c, folder.filePath("check.ddprun")); });
    dialog.extraArgumentsEdit()->setText("--bogus 3");
    QVERIFY(dialog.canLaunch());  // nothing the fields know is wrong
    QPushButton* launch = nullptr;
    for (QPushButton* b : dialog.findChildren<QPushButton*>())
      if (b->text() == "Launch") launch = b;
    QVERIFY(launch);
    launch->click();
    QVERIFY(dialog.result() != int(QDialog::Accepted));
    QVERIFY2(dialog.errorText("extra_arguments").contains("--bogus"), qPrintable(dialog.errorText("extra_arguments")));
    QVERIFY(QDir(folder.path()).entryList(QDir::Files).isEmpty());  // the check wrote nothing
    dialog.extraArgumentsEdit()->setText("--lr 0.01");
    QVERIFY(dialog.errorText("extra_arguments").isEmpty());
    launch->click();
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
  }

  // The dialog keeps its width when opened again, and a long refusal wraps instead of
  // stretching it (issue 34 point 6).
  void testLaunchDialogKeepsItsWidth() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    int first = 0;
    for (int opening = 0; opening < 3; ++opening) {
      LaunchDialog dialog;
      dialog.show();
      QVERIFY(QTest::qWaitForWindowExposed(&dialog));
      if (opening == 0) first = dialog.width();
      QCOMPARE(dialog.width(), first);
      dialog.setLaunchCheck([](const LaunchConfig&) {
        return QString("The following arguments were not expected: --bogus 3 --more words of the CLI's own. ")
            .repeated(3);
      });
      for (QPushButton* b : dialog.findChildren<QPushButton*>())
        if (b->text() == "Launch") b->click();
      QVERIFY(!dialog.errorText("extra_arguments").isEmpty());
      QTest::qWait(20);
      // At most the error column's cap (320 px) wider: the reason wraps (it was 1962 px).
      QVERIFY2(dialog.width() <= first + 320, qPrintable(QString("%1 -> %2").arg(first).arg(dialog.width())));
      dialog.extraArgumentsEdit()->setText("--lr 0.01");  // the next opening remembers this job
      dialog.setLaunchCheck({});
      for (QPushButton* b : dialog.findChildren<QPushButton*>())
        if (b->text() == "Launch") b->click();
    }
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

  // A fault: the run file deleted while the app shows it. The views keep the
  // run, the banner says what happened, and the run can still be saved and exported.
  void testRunFileDeletedWhileShown() {
    QTemporaryDir folder;
    const QString file = folder.filePath("shown.ddprun");
    testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.show();
    QVERIFY(window.openRun(file));
    const int64_t spans = window.currentRun()->span_count;
    QCOMPARE(window.runFileWatch()->state(), RunFileWatch::State::Intact);
    QVERIFY(QFile::remove(file));
    QTRY_COMPARE_WITH_TIMEOUT(window.runFileWatch()->state(), RunFileWatch::State::Deleted, 5000);
    QVERIFY(window.errorBanner()->isVisible());
    QVERIFY2(window.errorBanner()->text().contains("was deleted from disk"), qPrintable(window.errorBanner()->text()));
    QVERIFY(window.currentRun());
    QCOMPARE(window.currentRun()->span_count, spans);  // nothing shown is lost
    QVERIFY(!window.reloadButton()->isVisible());
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
    testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.show();
    QVERIFY(window.openRun(file));
    const QString other = folder.filePath("other.ddprun");
    testing::write_test_run(other.toStdString(), 3, 2);
    QVERIFY(std::rename(other.toLocal8Bit().constData(), file.toLocal8Bit().constData()) == 0);
    QTRY_COMPARE_WITH_TIMEOUT(window.runFileWatch()->state(), RunFileWatch::State::Replaced, 5000);
    QVERIFY2(window.errorBanner()->text().contains("was replaced on disk by mlp, 3 ranks"),
             qPrintable(window.errorBanner()->text()));
    QCOMPARE(window.currentRun()->ranks.size(), size_t{2});  // the earlier run stays on screen
    QVERIFY(window.reloadButton()->isVisible());
    // The earlier run can still be kept: the app reads it through its own connection.
    QVERIFY(window.saveRunCopy(folder.filePath("earlier.ddprun")));
    QCOMPARE(ddpscope::probes::RunStoreReader(folder.filePath("earlier.ddprun").toStdString()).run().world_size, 2);
    // Reload shows the new file and the watch starts again.
    QVERIFY(QMetaObject::invokeMethod(window.reloadButton(), "click"));
    QCOMPARE(window.currentRun()->ranks.size(), size_t{3});
    QCOMPARE(window.runFileWatch()->state(), RunFileWatch::State::Intact);
    QVERIFY(!window.errorBanner()->isVisible());
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
    QCOMPARE(window.runFileWatch()->state(), RunFileWatch::State::Intact);
    // Rewritten in place (as --force does): the earlier run is gone, and saving says so.
    {
      QFile f(file);
      QVERIFY(f.open(QIODevice::ReadWrite));
      QVERIFY(f.resize(0));
    }
    QFile::remove(file + "-wal");
    QFile::remove(file + "-shm");
    testing::write_test_run(file.toStdString(), 1, 3);
    QTRY_COMPARE_WITH_TIMEOUT(window.runFileWatch()->state(), RunFileWatch::State::Replaced, 5000);
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.saveRunCopy(folder.filePath("gone.ddprun")));
    QVERIFY2(failed.at(0).at(0).toString().contains("rewritten in place"), qPrintable(failed.at(0).at(0).toString()));
    QVERIFY(!QFile::exists(folder.filePath("gone.ddprun")));
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
    QVERIFY(!window.errorBanner()->isVisible());
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.openRun(bad));
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains("not a ddpscope run file"));
    QVERIFY(window.currentRun());  // the good run stays open
    // The error is shown whole, in words for users: no source location.
    QVERIFY(window.errorBanner()->isVisible());
    QCOMPARE(window.errorBanner()->text(), failed.at(0).at(0).toString());
    QVERIFY2(!window.errorBanner()->text().contains(".cpp:"), qPrintable(window.errorBanner()->text()));
    QVERIFY(window.errorBanner()->wordWrap());
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
    QVERIFY(!window.errorBanner()->isVisible());
    // Without a job, the job's actions are off (they did nothing, silently).
    QVERIFY(!window.stopAction()->isEnabled());
    QVERIFY(!window.followAction()->isEnabled());
  }
};

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
