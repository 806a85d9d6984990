// The Live tab's charts on the offscreen platform: axes and labels that read well, a dark
// palette followed, the log scale and the overlap chart beside the timeline's range.
#include <QtTest/QtTest>
#include <QLineSeries>
#include <QFile>
#include <QSignalSpy>
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
#include <QLogValueAxis>
#include <QLegendMarker>
#include <QStandardItemModel>
#include <QTableView>
#include <QTreeWidget>
#include <QDropEvent>
#include <QMimeData>
#include <QProcess>
#include <QProgressDialog>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QAbstractBarSeries>
#include <nlohmann/json.hpp>
#include <set>
#include "gui_test_runs.h"
#include "layout_check.h"
#include "live_monitor.h"
#include "category_palette.h"
#include "main_window.h"
#include "trace_fixture.h"
#include "timeline_view.h"
#include "overlap_page.h"
#include "timeline_page.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestLiveMonitor : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings go to a folder of the test's own, never the user's ~/.config.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

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
    const AxisFit clipped = fitAxes(points, true);
    QCOMPARE(clipped.clipped, 1);
    QCOMPARE(clipped.max, 25000.0);
    QVERIFY(clipped.y1 > 206 && clipped.y1 < 400);
    const AxisFit whole = fitAxes(points, false);
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
      live.setRun(loadRun(growing.toStdString()), /*live=*/true);
      QCOMPARE(live.progressBar()->value(), 19);
      QVERIFY2(live.statusLabel()->text().startsWith("iteration 19 of 40"), qPrintable(live.statusLabel()->text()));
    }
    const QString file = folder.filePath("job.ddprun");
    testing::write_test_run(file.toStdString(), 2, 50);
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    LiveMonitor* m = window.part<LiveMonitor>();
    QCOMPARE(m->progressBar()->value(), 50);
    QCOMPARE(m->progressBar()->maximum(), 50);
    QVERIFY(m->statusLabel()->text().contains("50 iterations recorded"));
    for (const QString chart : {"overlap", "iteration"}) {
      QValueAxis* y = m->axis(chart, Qt::Vertical);
      QValueAxis* x = m->axis(chart, Qt::Horizontal);
      QCOMPARE(y->min(), 0.0);
      QCOMPARE(x->min(), 0.0);
      // The x axis ends at the last iteration (50 iterations: not at 100), its ticks round:
      // from 0 in steps of 1, 2 or 5 times 10^k.
      QCOMPARE(x->max(), 50.0);
      QCOMPARE(x->tickType(), QValueAxis::TicksDynamic);
      QCOMPARE(x->tickAnchor(), 0.0);
      const double step = x->tickInterval();
      const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
      QVERIFY2(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9,
               qPrintable(QString("%1: x %2..%3, step %4").arg(chart).arg(x->min()).arg(x->max()).arg(step)));
      QVERIFY(x->max() / step >= 3 && x->max() / step <= 10);
    }
  }

  // Issue 68: the axes read at a glance: whole numbers without ".0", no decimal that no
  // tick needs, and a fast job's throughput in thousands grouped ("500,000", not
  // "500000.0"), at a laptop's size.
  void testAxisLabelsReadAtAGlance() {
    using namespace ddpscope::probes;
    QTemporaryDir folder;
    const QString file = folder.filePath("fast.ddprun");
    {
      RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      ddpscope::gui::testing::write_iterations(w, 0, 1, 30);
      EventBatch b;
      b.rank = 0;
      for (int i = 1; i <= 30; ++i) {
        const std::pair<const char*, double> metrics[] = {
            {"samples_per_s", 480000.0 + 1000 * (i % 5)}, {"loss", 2.5 - 0.05 * i}, {"iteration_ms", 1500.0 + i % 3}};
        for (const auto& [name, value] : metrics)
          b.records.push_back(
              nlohmann::json{{"type", "metric"}, {"iteration", i}, {"name", name}, {"value", value}}.dump());
      }
      w.write(b);
      w.end_run("finished");
    }
    LiveMonitor live;
    live.resize(1280, 800);
    live.setRun(loadRun(file.toStdString()));
    live.show();
    QVERIFY(QTest::qWaitForWindowExposed(&live));
    QApplication::processEvents();
    QStringList problems, rate;
    for (QChartView* view : live.findChildren<QChartView*>()) {
      problems << ddpscope::gui::testing::axis_label_problems(view);
      if (view->chart()->title().startsWith("Throughput"))
        for (const QStringList& axis : ddpscope::gui::testing::axis_labels(view))
          rate << axis;
    }
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
    QVERIFY2(rate.contains("500,000") || rate.contains("480,000") || rate.contains("400,000"),
             qPrintable(rate.join(' ')));
  }

  // A PyTorch script that logs no loss: the Loss chart says so in a sentence instead of an
  // empty frame with ticks "0 0 0 0 0 1".
  void testAScriptWithoutLossSaysSo() {
    QTemporaryDir folder;
    const QString file = folder.filePath("script.ddprun");
    testing::write_test_run(file.toStdString(), 2, 8);
    LiveMonitor live;
    live.setRun(loadRun(file.toStdString()));
    QCOMPARE(live.pointCount("loss"), 0);
    QVERIFY2(live.monitorTitle("loss").contains("none reported"), qPrintable(live.monitorTitle("loss")));
    QVERIFY(!live.axis("loss", Qt::Horizontal)->isVisible());
    QVERIFY(!live.axis("loss", Qt::Vertical)->isVisible());
  }

  // Two ranks' profiler traces of a 128-GPU job, which hold its iterations 551 and 552: the
  // bar and the status say so (not "552 / 552", not "552 iterations recorded"), the axes span
  // the sample, and the empty Throughput says why (issue 68).
  void testASampleOfALongerJobSaysWhatItHolds() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QVERIFY(ddpscope::gui::testing::openTraces(window, "hta_nccl_of_128"));
    window.showTab("Live");
    LiveMonitor* live = window.part<LiveMonitor>();
    QCOMPARE(live->progressBar()->text(), QString("iterations 551 to 552 of the job (a sample)"));
    QVERIFY2(live->statusLabel()->text().contains("2 iterations (551 to 552 of the job) recorded"),
             qPrintable(live->statusLabel()->text()));
    QCOMPARE(live->axis("iteration", Qt::Horizontal)->min(), 550.0);
    QVERIFY2(live->monitorTitle("samples").startsWith("Throughput: none recorded"),
             qPrintable(live->monitorTitle("samples")));
    QVERIFY(!live->axis("samples", Qt::Horizontal)->isVisible());
  }

  // The count of points above the iteration-time axis is of the axis as drawn: rounding
  // the axis up (to 80 here) brings the 65 ms point back in; only the 120 ms one is above.
  void testPointsAboveTheAxisAreThoseTheAxisLeavesOut() {
    using namespace ddpscope::probes;
    QTemporaryDir folder;
    const QString file = folder.filePath("spikes.ddprun");
    std::vector<double> values;
    {
      RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      testing::write_iterations(w, 0, 1, 60);
      EventBatch b;
      b.rank = 0;
      for (int i = 1; i <= 60; ++i) {
        const double ms = i == 20 ? 65.0 : i == 40 ? 120.0 : 38.0 + i % 3;
        values.push_back(ms);
        b.records.push_back(
            nlohmann::json{{"type", "metric"}, {"iteration", i}, {"name", "iteration_ms"}, {"value", ms}}.dump());
      }
      w.write(b);
      w.end_run("finished");
    }
    LiveMonitor live;
    live.setRun(loadRun(file.toStdString()));
    const double top = live.axis("iteration", Qt::Vertical)->max();
    const auto above = std::count_if(values.begin(), values.end(), [&](double v) { return v > top; });
    QVERIFY2(above >= 1 && top < 120, qPrintable(QString("axis to %1").arg(top)));
    const QString title = live.monitorTitle("iteration");
    const QString expected =
        above == 1 ? QString("1 point above the axis, at 120.0 ms") : QString("%1 points above the axis").arg(above);
    QVERIFY2(title.contains(expected), qPrintable(title + " / axis to " + QString::number(top)));
    QVERIFY(!title.contains("point(s)"));
  }

  // One colour per rank in every chart, and the legends in rank order, whichever rank's
  // points came first (rank 1's did here: its overlap ratios were in the file first).
  void testEachRankKeepsItsColourInEveryChart() {
    using namespace ddpscope::probes;
    QTemporaryDir folder;
    const QString first = folder.filePath("first.ddprun"), later = folder.filePath("later.ddprun");
    auto write = [](const QString& path, bool bothRanks) {
      RunStoreWriter w(path.toStdString());
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      for (int rank = bothRanks ? 0 : 1; rank < 2; ++rank) {
        testing::write_iterations(w, rank, 1, 6);
        EventBatch b;
        b.rank = rank;
        for (int i = 1; i <= 6; ++i)
          b.records.push_back(
              nlohmann::json{{"type", "metric"}, {"iteration", i}, {"name", "iteration_ms"}, {"value", 10.0 + rank}}
                  .dump());
        w.write(b);
      }
      w.end_run("finished");
    };
    write(first, false);
    write(later, true);
    LiveMonitor live;
    live.setRun(loadRun(first.toStdString()), true);
    live.setRun(loadRun(later.toStdString()), true);
    for (const QString name : {"iteration", "overlap"}) {
      QChart* chart = nullptr;
      for (QChartView* v : live.findChildren<QChartView*>())
        if (v->chart()->title().contains(name == "iteration" ? "Iteration time" : "Overlap ratio")) chart = v->chart();
      QVERIFY(chart);
      const auto series = chart->series();
      QCOMPARE(series.size(), 2);
      for (int rank = 0; rank < 2; ++rank) {
        auto* line = qobject_cast<QLineSeries*>(series[rank]);
        QCOMPARE(line->name(), QString("rank %1").arg(rank));
        QCOMPARE(line->color(), rankColor(rank));
      }
      QStringList legend;
      for (auto* marker : chart->legend()->markers())
        legend << marker->label();
      QCOMPARE(legend, (QStringList{"rank 0", "rank 1"}));
    }
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
      QCOMPARE(window.part<OverlapPage>()->chartView()->chart()->theme(), QChart::ChartThemeDark);
      for (QChartView* v : window.part<LiveMonitor>()->findChildren<QChartView*>())
        QCOMPARE(v->chart()->theme(), QChart::ChartThemeDark);
    }
    QApplication::setPalette(saved);
    QTemporaryDir folder;
    testing::write_test_run(folder.filePath("run.ddprun").toStdString(), 2, 4);
    MainWindow window(folder.path());
    QVERIFY(window.openRun(folder.filePath("run.ddprun")));
    window.showTab("Overlap");
    QCOMPARE(window.part<OverlapPage>()->chartView()->chart()->theme(), QChart::ChartThemeLight);
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
    LiveMonitor* m = window.part<LiveMonitor>();
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
    QChart* chart = window.part<OverlapPage>()->chartView()->chart();
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
    QCOMPARE(window.part<QTabWidget>("tabs")->tabText(window.part<QTabWidget>("tabs")->currentIndex()),
             QString("Timeline"));
    QVERIFY(window.part<TimelinePage>()->view()->axis().begin_ns <= 29000 &&
            window.part<TimelinePage>()->view()->axis().end_ns >= 30000);
    QVERIFY(window.part<TimelinePage>()->view()->axis().end_ns - window.part<TimelinePage>()->view()->axis().begin_ns <
            2000);
  }
};

DDPSCOPE_TEST_MAIN(TestLiveMonitor)
#include "tst_live_monitor.moc"
