// The Overlap tab's chart: an iteration's bar is as tall as the iteration, and
// communication hidden behind compute is part of the compute, not stacked on top.
#include <QtTest/QtTest>

#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QStackedBarSeries>
#include <QLabel>
#include <QLegend>
#include <QTextDocumentFragment>
#include <QCheckBox>
#include <QListWidget>
#include <QSettings>
#include <QSplitter>
#include <QAction>
#include <QTableView>
#include <QTabWidget>
#include <QTemporaryDir>

#include "gui_test_runs.h"
#include "layout_check.h"
#include "trace_fixture.h"
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
    ddpscope::gui::testing::write_test_run(file.toStdString(), 2, 6);
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

  // Issue 68: a GPU run's Overlap view at a laptop's sizes: every entry of the legend (the
  // GPU's long names) reads whole, none cut to "...", and the axes' numbers read well.
  void testOverlapLegendIsWholeOnSmallScreens_data() {
    QTest::addColumn<QSize>("size");
    QTest::newRow("1024x700") << QSize(1024, 700);
    QTest::newRow("1280x800") << QSize(1280, 800);
  }

  void testOverlapLegendIsWholeOnSmallScreens() {
    QFETCH(QSize, size);
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.resize(size);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(ddpscope::gui::testing::openTraces(window, "kineto_cuda_nccl_1"));
    window.showTab(QStringLiteral("overlap"));
    QApplication::processEvents();
    QApplication::processEvents();
    auto* page = window.part<OverlapPage>();
    QChart* chart = page->chartView()->chart();
    auto* bars = qobject_cast<QStackedBarSeries*>(chart->series().first());
    QVERIFY(bars);
    QVERIFY(bars->barSets().first()->label().contains("GPU"));  // the GPU's names, the long ones
    QStringList cut = overlapLegendEntriesCut(page, bars);
    cut << ddpscope::gui::testing::axis_label_problems(page->chartView());
    QVERIFY2(cut.isEmpty(), qPrintable(cut.join('\n')));
  }

 private:
  // The bar sets whose names the page does not show whole: in the chart's legend, drawn
  // without "...", or in the page's legend label with the room for all its lines.
  static QStringList overlapLegendEntriesCut(OverlapPage* page, QStackedBarSeries* bars) {
    QStringList shown;
    QLegend* legend = page->chartView()->chart()->legend();
    if (legend->isVisible()) {
      for (const QGraphicsItem* item : page->chartView()->scene()->items())
        if (auto* text = dynamic_cast<const QGraphicsTextItem*>(item); text && legend->isAncestorOf(item))
          shown << text->toPlainText();
    }
    for (QLabel* label : page->findChildren<QLabel*>(QStringLiteral("legend")))
      if (label->isVisible() && label->height() >= label->heightForWidth(label->width()))
        shown << QTextDocumentFragment::fromHtml(label->text()).toPlainText().replace(QChar::Nbsp, QLatin1Char(' '));
    QStringList cut;
    for (QBarSet* set : bars->barSets())
      if (std::none_of(shown.begin(), shown.end(), [&](const QString& s) { return s.contains(set->label()); }))
        cut << QStringLiteral("legend entry \"%1\" not shown whole (shown: %2)").arg(set->label(), shown.join(" | "));
    return cut;
  }
};

DDPSCOPE_TEST_MAIN(TestOverlapPage)
#include "tst_overlap_page.moc"
