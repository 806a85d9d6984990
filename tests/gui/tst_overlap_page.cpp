// The Overlap tab's chart: an iteration's bar is as tall as the iteration, and
// communication hidden behind compute is part of the compute, not stacked on top.
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

class TestOverlapPage : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // Issue 34, point 8: the Overlap chart's bar for an iteration is as tall as the
  // iteration; communication hidden behind compute is part of the compute, not on top.
  void testOverlapBarsAreAsTallAsTheirIterations() {
    QTemporaryDir folder;
    const QString file = folder.filePath("overlap.ddprun");
    testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.openRun(file));
    window.showTab(QStringLiteral("overlap"));
    auto* page = window.findChild<OverlapPage*>();
    QVERIFY(page && page->chartView()->chart());
    const auto series = page->chartView()->chart()->series();
    QCOMPARE(series.size(), 1);
    auto* bars = qobject_cast<QStackedBarSeries*>(series.first());
    QVERIFY(bars);
    std::vector<double> rank0;
    for (const auto& it : window.currentRun()->analysis.iterations) {
      if (it.rank == 0) rank0.push_back(it.iteration_ms);
    }
    QCOMPARE(bars->barSets().first()->count(), static_cast<int>(rank0.size()));
    bool someHidden = false;
    for (int i = 0; i < static_cast<int>(rank0.size()); ++i) {
      double height = 0;
      for (QBarSet* set : bars->barSets())
        height += set->at(i);
      QVERIFY2(std::abs(height - rank0[static_cast<size_t>(i)]) < 1e-9,
               qPrintable(QStringLiteral("bar %1: %2 ms, iteration %3 ms").arg(i).arg(height).arg(rank0[i])));
      someHidden = someHidden || bars->barSets().at(2)->at(i) > 0;
    }
    QVERIFY(someHidden);  // the test run overlaps its allreduces with backward
  }
};

DDPSCOPE_TEST_MAIN(TestOverlapPage)
#include "tst_overlap_page.moc"
