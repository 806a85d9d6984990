// The Timeline tab: GPU gaps a click away, labels and marks, selection keys, ranges and
// search.
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

using namespace ddpscope::gui;

// The window at 1400x900 with `file` open on its Timeline tab, drawn.
bool showOnTimeline(MainWindow& window, const QString& file) {
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
QPoint pointAt(TimelineView* view, int64_t t, int lane, int row) {
  return QPoint(TimelineView::kLabelWidth + static_cast<int>(view->axis().toPx(t)),
                view->layout().rowTop(lane, row) + TrackLayout::kRowHeight / 2);
}

class TestTimelinePage : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // A real NCCL job's traces: the Summary's figures are the GPU's, and each of the
  // longest GPU gaps is a link that shows it in the timeline, selected as the range.
  void testGpuGapsAreAClickFromTheTimeline() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QSignalSpy finished(window.part<TraceImportJob>(), &TraceImportJob::finished);
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
    QCOMPARE(window.part<QTabWidget>("tabs")->currentIndex(), window.tabIndex("timeline"));
    QCOMPARE(window.part<TimelinePage>()->view()->rangeBegin(), g.begin_ns);
    QCOMPARE(window.part<TimelinePage>()->view()->rangeEnd(), g.end_ns);
    QVERIFY(window.part<TimelinePage>()->view()->axis().begin_ns <= g.begin_ns &&
            window.part<TimelinePage>()->view()->axis().end_ns >= g.end_ns);
    // The Breakdown and the Ranks tab split the GPU's time, and name the one straggler.
    window.showTab("Breakdown");
    bool gpuHeadline = false;
    for (QLabel* label : window.part<TimeBreakdownPage>()->findChildren<QLabel*>())
      gpuHeadline = gpuHeadline ||
                    (label->text().contains("From the GPU's kernels") && label->text().contains("Straggler: rank 1"));
    QVERIFY(gpuHeadline);
    window.showTab("Ranks");
    auto* metric = window.part<RanksPage>()->findChild<QComboBox*>();
    QVERIFY(metric && metric->findText("GPU computation") >= 0 && metric->findText("forward") < 0);
  }

  // A span imported from a trace: Details lists every argument the trace gave it (a
  // kernel's grid, block, stream, registers, occupancy) and the run file's row field by
  // field; the panel sorts by a header click and copies what is selected, or all.
  void testDetailsListEveryRecordedFieldAndArgument() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QSignalSpy finished(window.part<TraceImportJob>(), &TraceImportJob::finished);
    QVERIFY(window.openPath(QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/kineto_cuda_nccl_1"));
    QVERIFY(finished.wait(60000));
    window.showTab("Timeline");
    TimelineView* view = window.part<TimelinePage>()->view();
    SpanRef kernel;
    for (size_t l = 0; l < view->data().lanes.size() && !kernel.valid(); ++l)
      for (size_t i = 0; i < view->data().lanes[l].spans.size(); ++i)
        if (view->data().lanes[l].spans[i].kind == ddpscope::probes::Kind::GpuKernel) {
          kernel = {static_cast<int>(l), static_cast<int64_t>(i), SpanRef::In::Spans};
          break;
        }
    QVERIFY(kernel.valid());
    view->select(kernel);
    QTreeWidget* details = window.part<TimelinePage>()->details();
    QMap<QString, QString> args, recorded;
    for (int i = 0; i < details->topLevelItemCount(); ++i) {
      QTreeWidgetItem* group = details->topLevelItem(i);
      auto& into = group->text(0) == "Arguments" ? args : recorded;
      if (group->text(0) != "Arguments" && group->text(0) != "Recorded") continue;
      for (int c = 0; c < group->childCount(); ++c)
        into[group->child(c)->text(0)] = group->child(c)->text(1);
    }
    for (const char* key :
         {"grid", "block", "stream", "correlation", "registers per thread", "est. achieved occupancy %", "device"})
      QVERIFY2(args.contains(key), qPrintable(QStringList(args.keys()).join(", ")));
    QVERIFY(args["grid"].startsWith("[") && args["block"].startsWith("["));
    QCOMPARE(recorded["kind"], QString("gpu_kernel"));
    QVERIFY(recorded.contains("t_begin_ns") && recorded.contains("name"));
    // Sortable: a click on the Field header sorts; before it, reading order.
    QCOMPARE(details->topLevelItem(0)->text(0), QString("Name"));
    details->sortByColumn(0, Qt::AscendingOrder);
    QStringList top;
    for (int i = 0; i < details->topLevelItemCount(); ++i)
      top << details->topLevelItem(i)->text(0);
    QStringList sorted = top;
    std::sort(sorted.begin(), sorted.end(), [](const QString& a, const QString& b) { return a < b; });
    QCOMPARE(top, sorted);
    // Copyable: all rows when none is selected, else the selected ones.
    details->clearSelection();
    window.part<TimelinePage>()->copyDetails();
    const QString all = QGuiApplication::clipboard()->text();
    QVERIFY2(all.contains("grid\t[") && all.contains("Kind\t"), qPrintable(all.left(400)));
    details->clearSelection();
    details->topLevelItem(0)->setSelected(true);
    window.part<TimelinePage>()->copyDetails();
    QCOMPARE(QGuiApplication::clipboard()->text().count('\n'), 0);
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
    QVERIFY(showOnTimeline(window, file));
    TimelineView* timeline = window.part<TimelinePage>()->view();
    timeline->fitAll();
    const QImage image = timeline->grab().toImage();
    const int x = TimelineView::kLabelWidth + static_cast<int>(timeline->axis().toPx(1250));
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
    QCOMPARE(timeline->data().nameOf(picked->name), std::string("injected stall"));
    // The ruler names the iteration in view: rank 0's iterations carry their numbers.
    QCOMPARE(timeline->data().iterations.size(), size_t(3));
    for (size_t i = 0; i < 3; ++i)
      QCOMPARE(timeline->data().iterations[i].number, int64_t(i + 1));
  }

  // Spans and marks are selected and inspected as in Perfetto: the details, the parent
  // link, empty space, a bucket-ready tick, the same collective on another rank.
  void testTimelineSelection() {
    AtIteration2 run;
    QVERIFY(run.open());
    TimelinePage* page = run.page;
    TimelineView* view = run.view;
    auto at = [&](int64_t t, int lane, int row) { return pointAt(view, t, lane, row); };
    QVERIFY(page->legend()->text().contains("bucket allreduce"));
    QVERIFY(page->legend()->text().contains("forward"));
    QSignalSpy status(view, &TimelineView::spanClicked);

    // A click on forward selects it; the details panel shows its fields.
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, at(2100, 0, 1));
    const TimelineSpan* picked = view->data().resolve(view->selection());
    QVERIFY(picked);
    QCOMPARE(view->data().nameOf(picked->name), std::string("forward"));
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
                      QPoint(TimelineView::kLabelWidth + static_cast<int>(std::lround(view->axis().toPx(2640))),
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
  }

  // The keys move the view as Perfetto's do; a drag measures a range.
  void testTimelineKeysAndRange() {
    AtIteration2 run;
    QVERIFY(run.open());
    TimelinePage* page = run.page;
    TimelineView* view = run.view;
    auto at = [&](int64_t t, int lane, int row) { return pointAt(view, t, lane, row); };
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
  }

  // Ctrl+F (or /) searches; a click on a rank's header collapses it.
  void testTimelineSearchAndCollapse() {
    AtIteration2 run;
    QVERIFY(run.open());
    TimelinePage* page = run.page;
    TimelineView* view = run.view;
    // Ctrl+F opens the search bar; Enter finds the next finalize, Shift+Enter the previous.
    QTest::keyClick(view, Qt::Key_F, Qt::ControlModifier);
    QVERIFY(page->searchBar()->isVisible());
    QTest::keyClicks(page->searchField(), "finalize");
    QTest::keyClick(page->searchField(), Qt::Key_Return);
    QCOMPARE(page->searchResults().matches.size(), size_t(12));
    const int first = page->currentMatch();
    QVERIFY(first >= 0);
    QCOMPARE(view->data().nameOf(view->data().resolve(view->selection())->name), std::string("finalize"));
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
};

QTEST_MAIN(TestTimelinePage)
#include "tst_timeline_page.moc"
