// Jobs the live tests launch from the app: a small MLP job of a few iterations.
#pragma once

#include <QtTest/QtTest>

#include <QElapsedTimer>
#include <QGraphicsView>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QSpinBox>
#include <QProgressBar>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include "bucket_table_model.h"
#include "graph_view.h"
#include "gui_test_runs.h"
#include "hang_view.h"
#include "autograd_lesson_view.h"
#include "bucket_lesson_view.h"
#include "learn_page.h"
#include "ring_lesson_view.h"
#include "messages_page.h"
#include "run_store_reader.h"
#include "sequence_view.h"
#include "live_monitor.h"
#include "live_run_loader.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "own_processes.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "timeline_page.h"
#include "timeline_view.h"
#include <QStandardItemModel>
#include <QTreeWidget>
#include "run_list_model.h"

namespace ddpscope::gui::live_job_fixture {

using namespace ddpscope::gui;

// What the tests of this fixture share.
class LiveJobTest : public QObject {
 public:
  LiveJobTest() { ddpscope_tests::test_tag(); }  // before the first job starts

 protected:
  static LaunchConfig smallJob(int iterations) {
    LaunchConfig c;
    c.model = "mlp";
    c.worldSize = 2;
    c.iterations = iterations;
    c.batch = 16;
    c.width = 64;
    c.depth = 3;
    return c;
  }

  // This test's live ddpscope-worker processes (own_processes.h: tests beside it run jobs too).
  static int workersRunning() { return ddpscope_tests::own_processes("ddpscope-worker"); }

  QString currentTab(MainWindow& w) {
    return w.part<QTabWidget>("tabs")->tabText(w.part<QTabWidget>("tabs")->currentIndex());
  }
};

}  // namespace ddpscope::gui::live_job_fixture
