// The app at first sight (issue 34), on real widgets (offscreen): what a newcomer meets
// on first clicks. The Learn tab, first shown, has the lesson its box names loaded, so
// Play and the arrow keys work at once; the run list lists and selects the run shown,
// wherever its file lives; a failed run's iteration cut short by an error is named, not
// averaged, and drawn as such; a span found near the run's start is shown without
// negative times.
#include <QtTest/QtTest>

#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QStackedBarSeries>
#include <QLabel>
#include <QCheckBox>
#include <QListWidget>
#include <QSettings>
#include <QSplitter>
#include <QAction>
#include <QTableView>
#include <QTabWidget>
#include <QTemporaryDir>

#include "gui_test_runs.h"
#include "graph_view.h"
#include "autograd_lesson_view.h"
#include "bucket_lesson_view.h"
#include "learn_page.h"
#include "ring_lesson_view.h"
#include "lesson.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "overlap_page.h"
#include "run_data.h"
#include "run_list_model.h"
#include "run_store_writer.h"
#include "timeline_page.h"
#include "timeline_view.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestFirstSight : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void testLearnTabIsReadyWhenFirstShown() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.resize(1280, 800);
    window.show();
    LearnPage* page = window.part<LearnPage>();
    QVERIFY(page->lesson().steps.empty());  // nothing loaded before the tab is opened
    window.showTab(QStringLiteral("learn"));
    // Read off the UI thread (lesson_open_job.h): the tab draws at once, the lesson follows.
    QTRY_VERIFY_WITH_TIMEOUT(page->lesson().steps.size() > 20, 10000);
    QCOMPARE(page->lessonBox()->currentIndex(), 0);
    QTest::keyClick(page, Qt::Key_Right);
    QTest::keyClick(page, Qt::Key_Right);
    QCOMPARE(page->applied(), size_t{2});
    // Leaving and coming back keeps the student's place.
    window.showTab(QStringLiteral("summary"));
    window.showTab(QStringLiteral("learn"));
    QCOMPARE(page->applied(), size_t{2});
  }

  // Issue 34, point 10: a lesson says what is drawn. Lesson 1's graph is whole from the
  // first step: the words say the forward has run. A DDP lesson names the cap its run was
  // recorded with. Lesson 4 says its failure once, and no wait "since 0 s". A released
  // context lists no gradients. Predict mode's verdict is on the page.
  void testLessonsSayWhatIsDrawn() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.resize(1280, 800);
    window.show();
    LearnPage* page = window.part<LearnPage>();
    QVERIFY(window.openLesson(0));
    QVERIFY2(page->aboutLabel()->text().contains("The forward has run"), qPrintable(page->aboutLabel()->text()));
    // The end of lesson 1: both workers released the context; no gradient is listed held.
    QTest::keyClick(page, Qt::Key_End);
    const LessonState end = page->state();
    QCOMPARE(end.released.size(), size_t{2});
    QVERIFY(end.accumulated.empty());
    QStringList listed;
    for (int i = 0; i < page->lessonView<AutogradLessonView>()->gradientList()->count(); ++i)
      listed << page->lessonView<AutogradLessonView>()->gradientList()->item(i)->text();
    QVERIFY2(listed.filter("context released").size() == 2 && listed.filter("AccumulateGrad").isEmpty(),
             qPrintable(listed.join(" | ")));
    // Lesson 3: "1 MiB buckets", from the run's own config (the catalog says {cap}).
    QVERIFY(window.openLesson(3));
    QVERIFY2(page->aboutLabel()->text().contains("1 MiB buckets") && !page->aboutLabel()->text().contains("{cap}"),
             qPrintable(page->aboutLabel()->text()));
    // Lesson 4's last step: the job's error once, the wait in milliseconds.
    QVERIFY(window.openLesson(4));
    QTest::keyClick(page, Qt::Key_End);
    const QString last = page->explanation()->text();
    QCOMPARE(last.count("produced no gradient for module.layers.2.weight"), 1);
    QVERIFY2(!last.contains("since 0 s") && last.contains("with the error above"), qPrintable(last));
    // Predict mode: a wrong click is answered on the page.
    QVERIFY(window.openLesson(0));
    page->predictBox()->setChecked(true);
    while (!page->isAskingPrediction() && page->applied() < page->lesson().steps.size())
      page->stepForward();
    QVERIFY(page->isAskingPrediction());
    const int next = page->lesson().steps[page->applied()].node;
    const int wrong = next == 0 ? 1 : 0;
    emit page->graph()->nodeIndexClicked(wrong);
    QVERIFY(page->feedback()->isVisible());
    QVERIFY2(page->feedback()->text().startsWith("Not "), qPrintable(page->feedback()->text()));
    emit page->graph()->nodeIndexClicked(next);
    QVERIFY2(page->feedback()->text().startsWith("Yes"), qPrintable(page->feedback()->text()));
  }

  void testTheRunListShowsTheRunOpenWhereverItLives() {
    QTemporaryDir workspace, elsewhere;
    const QString inside = workspace.filePath("inside.ddprun"), outside = elsewhere.filePath("outside.ddprun");
    ddpscope::gui::testing::write_test_run(inside.toStdString(), 2, 3);
    ddpscope::gui::testing::write_test_run(outside.toStdString(), 2, 4);
    MainWindow window(workspace.path());
    window.show();
    QCOMPARE(window.part<RunListModel>()->rowCount(), 1);
    QVERIFY(window.openRun(outside));
    // Listed first, marked, and the selected row.
    QCOMPARE(window.part<RunListModel>()->rowCount(), 2);
    QCOMPARE(window.part<RunListModel>()->index(0, 0).data(RunListModel::PathRole).toString(), outside);
    QVERIFY(
        window.part<RunListModel>()->index(0, 0).data(Qt::ToolTipRole).toString().contains("Outside the workspace"));
    QVERIFY(window.part<RunListModel>()->isOutside(0));
    const auto selected = [&] {
      const QModelIndexList rows = window.part<QTableView>("runs")->selectionModel()->selectedRows();
      return rows.size() == 1 ? rows[0].data(RunListModel::PathRole).toString() : QString();
    };
    QCOMPARE(selected(), outside);
    // Another run opened: it is selected, the outside one stays listed (a refresh too).
    QVERIFY(window.openRun(inside));
    QCOMPARE(selected(), inside);
    window.part<RunListModel>()->refresh();
    QCOMPARE(window.part<RunListModel>()->rowCount(), 2);
    QCOMPARE(selected(), inside);
  }

  // The run list can be hidden (View > Run list, Ctrl+B) and the choice is kept; an empty
  // workspace's list does not take a quarter of the window; a split the user dragged is
  // restored in the next window.
  void testTheRunListCanBeHiddenAndTheLayoutIsRemembered() {
    QSettings().clear();
    QTemporaryDir empty, workspace;
    {
      MainWindow window(empty.path());
      window.resize(1280, 800);
      window.show();
      QVERIFY(!window.runListShown());  // nothing to list
      window.part<QAction>("runListAction")->trigger();
      QVERIFY(!window.part<QAction>("runListAction")->isChecked());  // was ticked: the user's choice is "shown"
      window.part<QAction>("runListAction")->trigger();
      QVERIFY(window.runListShown());  // asked for: shown even empty
    }
    ddpscope::gui::testing::write_test_run(workspace.filePath("a.ddprun").toStdString(), 2, 3);
    {
      MainWindow window(workspace.path());
      window.resize(1280, 800);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      QVERIFY(window.runListShown());
      QVERIFY2(window.part<QTableView>("runs")->width() <= 1280 / 4,
               qPrintable(QString::number(window.part<QTableView>("runs")->width())));
      // Drag the split between the list and the tabs to 400 px.
      QSplitterHandle* handle = window.part<QSplitter>("mainSplitter")->handle(1);
      const QPoint grab = handle->rect().center();
      QTest::mousePress(handle, Qt::LeftButton, {}, grab);
      QMouseEvent move(QEvent::MouseMove, QPointF(grab + QPoint(400 - handle->x(), 0)),
                       handle->mapToGlobal(QPointF(grab + QPoint(400 - handle->x(), 0))), Qt::NoButton, Qt::LeftButton,
                       Qt::NoModifier);
      QApplication::sendEvent(handle, &move);
      QTest::mouseRelease(handle, Qt::LeftButton, {}, grab + QPoint(400 - handle->x(), 0));
      QVERIFY2(std::abs(window.part<QSplitter>("mainSplitter")->sizes().at(0) - 400) < 10,
               qPrintable(QString::number(window.part<QSplitter>("mainSplitter")->sizes().at(0))));
      QTest::keyClick(&window, Qt::Key_B, Qt::ControlModifier);  // hidden
      QVERIFY(!window.runListShown());
    }
    {
      MainWindow window(workspace.path());
      window.resize(1280, 800);
      window.show();
      QVERIFY(!window.runListShown());  // remembered
      window.setRunListShown(true);
      QApplication::processEvents();  // the splitter lays the list out again
      QVERIFY(window.runListShown());
      QVERIFY2(std::abs(window.part<QSplitter>("mainSplitter")->sizes().at(0) - 400) < 10,
               qPrintable(QString::number(window.part<QSplitter>("mainSplitter")->sizes().at(0))));
    }
    QSettings().clear();
  }

  void testAnIterationCutShortIsNamedNotAveraged() {
    // Rank 0's iteration 3 is the 5 s wait its collective's timeout cut short.
    QTemporaryDir folder;
    const QString file = folder.filePath("failed.ddprun");
    {
      using namespace ddpscope::probes;
      RunStoreWriter w(file.toStdString());
      w.begin_run({.world_size = 1});
      EventBatch b;
      b.names = {"iteration"};
      for (int it = 1; it <= 3; ++it) {
        const int64_t t = it * 10'000'000;
        b.events.push_back(BatchEvent{t, t + (it == 3 ? 5'000'000'000 : 9'000'000), -1, -1, -1, it, -1, 0, -1, -1, 0,
                                      static_cast<uint8_t>(Kind::Iteration),
                                      static_cast<uint8_t>(it == 3 ? kEndedByError : 0)});
      }
      w.write(b);
      w.end_run("failed", "timeout", 0);
    }
    MainWindow window(folder.path());
    window.show();
    QVERIFY(window.openRun(file));
    QCOMPARE(window.currentRun()->analysis.iterations.size(), size_t{2});
    QCOMPARE(window.currentRun()->analysis.cut_short.size(), size_t{1});
    window.showTab(QStringLiteral("timeline"));
    QVERIFY2(window.part<TimelinePage>()->legend()->text().contains("cut short by an error"),
             qPrintable(window.part<TimelinePage>()->legend()->text()));
    const auto& spans = window.part<TimelinePage>()->view()->data().lanes.at(0).spans;
    QCOMPARE(std::count_if(spans.begin(), spans.end(), [](const TimelineSpan& s) { return s.cut_short; }), 1);
  }

  // Issue 34, point 11: a run opens fitted, whole; a rank's iteration that began and never
  // ended (the stalled rank of a failed run) is drawn open to the run's end; the links of
  // one collective across ranks are in the legend.
  void testTheTimelineOpensWholeAndDrawsTheStalledIteration() {
    QTemporaryDir folder;
    const QString file = folder.filePath("stalled.ddprun");
    {
      using namespace ddpscope::probes;
      RunStoreWriter w(file.toStdString());
      w.begin_run({.world_size = 2});
      ddpscope::gui::testing::write_iterations(w, 0, 1, 4);
      ddpscope::gui::testing::write_iterations(w, 1, 1, 3);
      EventBatch b;  // rank 1's iteration 4: its forward, then nothing
      b.rank = 1;
      b.threads = {{0, 100, "compute"}};
      b.names = {"forward"};
      b.events.push_back(
          BatchEvent{3000, 3200, -1, -1, -1, 4, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Forward), 0});
      w.write(b);
      w.end_run("failed", "rank 0 timed out", 0);
    }
    MainWindow window(folder.path());
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.openRun(file));
    window.showTab(QStringLiteral("timeline"));
    TimelineView* view = window.part<TimelinePage>()->view();
    const int64_t length = view->data().end_ns - view->data().begin_ns;
    QVERIFY(view->axis().begin_ns <= view->data().begin_ns && view->axis().end_ns >= view->data().end_ns);
    QVERIFY(view->axis().end_ns - view->axis().begin_ns <= length * 105 / 100);  // a margin, no more
    const TimelineLane* compute1 = nullptr;
    for (const TimelineLane& lane : view->data().lanes) {
      if (lane.rank == 1 && lane.thread_name == "compute") compute1 = &lane;
    }
    QVERIFY(compute1);
    const auto open = std::find_if(compute1->open.begin(), compute1->open.end(),
                                   [](const TimelineSpan& s) { return s.kind == ddpscope::probes::Kind::Iteration; });
    QVERIFY(open != compute1->open.end());
    QCOMPARE(open->iteration, 4);
    QCOMPARE(open->begin_ns, int64_t{3000});
    QCOMPARE(open->end_ns, view->data().end_ns);
    // Rank 0 finished its iteration 4: nothing open there.
    for (const TimelineLane& lane : view->data().lanes) {
      if (lane.rank == 0)
        QVERIFY(std::none_of(lane.open.begin(), lane.open.end(),
                             [](const TimelineSpan& s) { return s.kind == ddpscope::probes::Kind::Iteration; }));
    }
    const QString legend = window.part<TimelinePage>()->legend()->text();
    QVERIFY2(legend.contains("never finished") && legend.contains("one collective across ranks"), qPrintable(legend));
    // A range's length is drawn in the iterations' band, not over the ruler's time labels.
    view->setRange(1000, 2000);
    const QRectF badge = view->rangeBadgeRect();
    QVERIFY(!badge.isEmpty());
    QVERIFY2(badge.bottom() <= TimelineView::kIterationBand, qPrintable(QString::number(badge.bottom())));
  }

  void testRevealingASpanNearTheStartShowsNoNegativeTime() {
    QTemporaryDir folder;
    const QString file = folder.filePath("start.ddprun");
    ddpscope::gui::testing::write_test_run(file.toStdString(), 2, 6);  // rank 0's forward of iteration 1: [0, 200] ns
    MainWindow window(folder.path());
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.openRun(file));
    window.showTab(QStringLiteral("timeline"));
    TimelineView* view = window.part<TimelinePage>()->view();
    view->showWindow(3000, 3400);  // zoomed in, later in the run
    const auto& spans = view->data().lanes.at(0).spans;
    const auto forward = std::find_if(spans.begin(), spans.end(), [](const TimelineSpan& s) {
      return s.kind == ddpscope::probes::Kind::Forward && s.iteration == 1;
    });
    QVERIFY(forward != spans.end());
    view->select(view->data().refOf(0, &*forward), true);
    QCOMPARE(view->axis().begin_ns, view->data().begin_ns);               // not 100 - 200 = -100
    QCOMPARE(view->axis().end_ns - view->axis().begin_ns, int64_t{400});  // the zoom kept
    QVERIFY(view->axis().end_ns >= forward->end_ns);
    // The whole run in view (a search's first match at the start): it stays in view, the
    // ruler not starting at a negative time.
    view->fitAll();
    const int64_t shown = view->axis().end_ns - view->axis().begin_ns;
    view->select(view->data().refOf(0, &*forward), true);
    QCOMPARE(view->axis().end_ns - view->axis().begin_ns, shown);
    QVERIFY(view->axis().begin_ns <= view->data().begin_ns && view->axis().end_ns >= view->data().end_ns);
  }
};

DDPSCOPE_TEST_MAIN(TestFirstSight)
#include "tst_first_sight.moc"
