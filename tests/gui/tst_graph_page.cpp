// The Graph tab: a distributed pass across workers.
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

class TestGraphPage : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

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
    QComboBox* choice = window.part<GraphPage>()->choice();
    QCOMPARE(choice->count(), 1);  // no local graph: only the pass
    QCOMPARE(choice->itemText(0), QString("context 0:1 · pass 0:1 · workers 0, 1"));
    GraphView* graph = window.part<GraphPage>()->view();
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

  // A run that recorded no autograd graph (PyTorch's flight dumps here) says so in the
  // selector; it read "rank 0 · iteration -1".
  void testARunWithoutAGraphSaysSo() {
    QTemporaryDir work;
    MainWindow window(work.path());
    QVERIFY(window.openPath(DDPSCOPE_SOURCE_DIR "/tests/probes/data/torch_2_11_flight/gloo-4-size/pickle"));
    window.showTab("Graph");
    QComboBox* choice = window.part<GraphPage>()->choice();
    QCOMPARE(choice->count(), 1);
    QCOMPARE(choice->itemText(0), QString("no graph recorded"));
    QVERIFY(window.part<GraphPage>()->view()->shown().nodes.empty());
  }
};

DDPSCOPE_TEST_MAIN(TestGraphPage)
#include "tst_graph_page.moc"
