// The Learn tab in the window: a lesson stepped by keys and back, side by side, predict
// mode.
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
#include "lesson_player.h"
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

class TestLearnPage : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // What the Learn tab shows at a step: the sentence, the lists and every node's label
  // and colour.
  static QStringList snapshot(LearnPage* page) {
    QStringList s{page->explanation()->text()};
    for (QListWidget* list : {page->lessonView<AutogradLessonView>()->inFlightList(),
                              page->lessonView<AutogradLessonView>()->gradientList()})
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
    QCOMPARE(window.part<QTabWidget>("tabs")->tabText(window.part<QTabWidget>("tabs")->currentIndex()),
             QString("Learn"));
    LearnPage* page = window.part<LearnPage>();
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
    QCOMPARE(page->lessonView<AutogradLessonView>()->gradientList()->count(), 2);
    QVERIFY(page->lessonView<AutogradLessonView>()->gradientList()->item(0)->text().contains("context released"));
    QCOMPARE(page->lessonView<AutogradLessonView>()->inFlightList()->count(), 0);
    QTest::keyClick(page, Qt::Key_Home);
    QCOMPARE(page->applied(), size_t{0});
    QTest::keyClick(page, Qt::Key_Space);
    QVERIFY(page->isPlaying());
    page->player()->setStepsPerSecond(200);
    QTRY_COMPARE_WITH_TIMEOUT(page->applied(), steps, 5000);  // plays to the end, then stops
    QTRY_VERIFY(!page->isPlaying());

    // Lesson 3 (DDP): the buckets instead of messages; at the end every one is reduced.
    QVERIFY(window.openLesson(3));
    QVERIFY(page->lesson().ddp);
    QVERIFY(page->lessonView<BucketLessonView>()->bucketView()->isVisibleTo(page) &&
            !page->lessonView<AutogradLessonView>()->sequence()->isVisibleTo(page));
    QVERIFY(page->lessonView<BucketLessonView>()->bucketCapBox()->isVisibleTo(page) &&
            !page->lessonView<AutogradLessonView>()->modeBox()->isVisibleTo(page));
    QTest::keyClick(page, Qt::Key_End);
    QCOMPARE(page->lessonView<BucketLessonView>()->bucketView()->buckets().size(), size_t{3});
    for (const BucketFill& b : page->lessonView<BucketLessonView>()->bucketView()->buckets())
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
    LearnPage* page = window.part<LearnPage>();
    QVERIFY(page->sideBySideBox()->isEnabled());
    page->sideBySideBox()->setChecked(true);
    QVERIFY(!page->lessonView<AutogradLessonView>()->compared().steps.empty());
    QVERIFY(std::any_of(page->lessonView<AutogradLessonView>()->compared().steps.begin(),
                        page->lessonView<AutogradLessonView>()->compared().steps.end(),
                        [](const LessonStep& s) { return s.kind == StepKind::SmartAsk; }));
    QVERIFY(page->lessonView<AutogradLessonView>()->compareGraph()->isVisibleTo(page));
    QCOMPARE(page->lessonView<AutogradLessonView>()->compareGraph()->shown().nodes.size(),
             page->lessonView<AutogradLessonView>()->compared().graph.nodes.size());
    QTest::keyClick(page, Qt::Key_Right);
    QVERIFY2(page->lessonView<AutogradLessonView>()->compareExplanation()->text().contains("step 1 of"),
             qPrintable(page->lessonView<AutogradLessonView>()->compareExplanation()->text()));
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
    LearnPage* page = window.part<LearnPage>();
    page->predictBox()->setChecked(true);
    const Lesson& l = page->lesson();
    const size_t first = l.nextNodeStep(0);
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
    const size_t second = l.nextNodeStep(first + 1);
    while (page->applied() < second)
      page->stepForward();
    page->stepForward();
    QVERIFY(page->isAskingPrediction());
    emit page->graph()->nodeIndexClicked(l.steps[second].node);
    QCOMPARE(page->score(), 1);
    QCOMPARE(page->predictions(), 2);
  }
};

DDPSCOPE_TEST_MAIN(TestLearnPage)
#include "tst_learn_page.moc"
