// The Messages tab: the send/recv pairs of an RPC run.
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

// Two workers: an add call each way, a distributed backward's two messages in context
// 0:7, and a sleep_ms call still in flight.
void writeFiveMessages(const QString& file) {
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

class TestMessagesPage : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  void testMessagesTabDrawsTheSendRecvPairs() {
    QTemporaryDir folder;
    const QString file = folder.filePath("rpc.ddprun");
    writeFiveMessages(file);
    MainWindow window(folder.path());
    window.resize(1200, 700);
    window.show();
    QVERIFY(window.openRun(file));
    window.showTab("Messages");
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCoreApplication::processEvents();
    MessagesPage* page = window.part<MessagesPage>();
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
    const double x = SequenceView::kLabelWidth + (view->axis().toPx(1000) + view->axis().toPx(1100)) / 2;
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
    TimelineView* timeline = window.part<TimelinePage>()->view();
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
    const QString sentAt = QString::fromStdString(formatDuration(1000 - timeline->data().begin_ns));
    QVERIFY2(selected.at(0).at(0).toString().contains("sent at " + sentAt),
             qPrintable(selected.at(0).at(0).toString()));
    QTreeWidget* details = window.part<TimelinePage>()->details();
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
};

DDPSCOPE_TEST_MAIN(TestMessagesPage)
#include "tst_messages_page.moc"
