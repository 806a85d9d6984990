// The Compare tab on real widgets (offscreen): two runs with known times side by side (the
// bars, the ops table with what changed, both timelines starting at their first compared
// iteration and moving together), and the errors a user can meet.
#include <QtTest/QtTest>

#include <QFileDialog>
#include <QLabel>
#include <QTableView>

#include "compare_page.h"
#include "gui_test_runs.h"
#include "known_iterations_run.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "scratch_test.h"
#include "time_breakdown_page.h"
#include "timeline_view.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;

class TestComparePage : public ScratchTest {
  Q_OBJECT
 private slots:
  void testTwoRunsSideBySide() {
    ddpscope::testing::write_known_iterations(path("a.ddprun"), 0.5, false, true);
    ddpscope::testing::write_known_iterations(path("b.ddprun"), 1.0, true, false, 6, 7'000'000);  // 7 ms later
    MainWindow window{QString()};
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.tabIsEmpty(QStringLiteral("compare")));
    QVERIFY(window.openRun(QString::fromStdString(path("a.ddprun"))));
    QVERIFY(window.compareWith(QString::fromStdString(path("b.ddprun"))));
    QVERIFY(!window.tabIsEmpty(QStringLiteral("compare")));
    QCOMPARE(window.part<QTabWidget>("tabs")->currentIndex(), window.tabIndex(QStringLiteral("compare")));
    ComparePage* page = window.part<ComparePage>();
    QVERIFY(page->headline().contains("B's iteration is 10.00 ms against A's 10.00 ms"));
    // The ops, the largest change first: gather appeared (+1 ms per rank and iteration).
    QAbstractItemModel* ops = page->opsTable()->model();
    QCOMPARE(ops->rowCount(), static_cast<int>(page->comparison().ops.size()));
    QCOMPARE(ops->index(0, 0).data().toString(), QString("appeared"));
    QCOMPARE(ops->index(0, 2).data().toString(), QString("gather"));
    QCOMPARE(ops->index(0, 5).data().toString(), QString("+1.000"));
    // Both timelines start at their first compared iteration (iteration 2: at 20 ms in A,
    // 27 ms in B), on one scale; a zoom on either moves the other by the same window.
    QTest::qWait(50);
    TimelineView* a = page->timelineA();
    TimelineView* b = page->timelineB();
    QVERIFY(a->axis().begin_ns < 20'000'000 && a->axis().end_ns > 30'000'000);
    QCOMPARE(b->axis().begin_ns, a->axis().begin_ns + 7'000'000);
    QCOMPARE(b->axis().end_ns - b->axis().begin_ns, a->axis().end_ns - a->axis().begin_ns);
    a->showWindow(24'000'000, 26'000'000);
    a->repaint();
    QCOMPARE(b->axis().begin_ns, int64_t{31'000'000});
    QCOMPARE(b->axis().end_ns, int64_t{33'000'000});
    b->showWindow(48'000'000, 50'000'000);
    b->repaint();
    QCOMPARE(a->axis().begin_ns, int64_t{41'000'000});
  }

  // Compare says how the runs' settings differ before it times them, warns when they
  // differ in more than one way, and says nothing when they agree.
  void testTheSettingsThatDifferAreSaid() {
    const auto write = [&](const char* name, const char* config, int ranks) {
      probes::RunStoreWriter w(path(name));
      w.begin_run({config, ranks, "mpi", "mlp"});
      for (int rank = 0; rank < ranks; ++rank)
        gui::testing::write_iterations(w, rank, 1, 4);
      w.end_run("finished");
    };
    write("base.ddprun", R"({"model":"mlp","width":64,"depth":2,"bucket_cap_mb":25.0,"iters":4,"seed":1})", 2);
    write("same.ddprun", R"({"model":"mlp","width":64,"depth":2,"bucket_cap_mb":25.0,"iters":9,"seed":7})", 2);
    write("wide.ddprun", R"({"model":"mlp","width":256,"depth":4,"bucket_cap_mb":0.25,"iters":4,"seed":1})", 2);
    MainWindow window{QString()};
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.openRun(QString::fromStdString(path("base.ddprun"))));
    QVERIFY(window.compareWith(QString::fromStdString(path("same.ddprun"))));
    ComparePage* page = window.part<ComparePage>();
    QCOMPARE(page->settingsNote(), QString());  // iterations and seed change no iteration's work
    QVERIFY(window.compareWith(QString::fromStdString(path("wide.ddprun"))));
    const QString note = page->settingsNote();
    for (const char* words : {"width (A 64, B 256)", "depth (A 2, B 4)", "bucket_cap_mb (A 25.0, B 0.25)",
                              "3 differences", "cannot be put down to any one of them"})
      QVERIFY2(note.contains(words), qPrintable(note));
    QVERIFY(note.startsWith(QStringLiteral("⚠")));
    // Above the headline.
    auto* settings = page->findChild<QLabel*>("compareSettings");
    QVERIFY(settings && settings->isVisible());
    auto* headline = page->findChild<QLabel*>("compareHeadline");
    QVERIFY(headline && settings->geometry().bottom() <= headline->geometry().top());
    // One difference: said, without the warning.
    write("ranks.ddprun", R"({"model":"mlp","width":64,"depth":2,"bucket_cap_mb":25.0})", 4);
    QVERIFY(window.compareWith(QString::fromStdString(path("ranks.ddprun"))));
    QVERIFY2(page->settingsNote().contains("world size (A 2, B 4)"), qPrintable(page->settingsNote()));
    QVERIFY(!page->settingsNote().contains(QStringLiteral("⚠")));
  }

  // At 1024x700 with the run list shown, each timeline keeps room for several rows (the
  // page scrolls instead): they had about 3 rows each under the headline and bars.
  void testTimelinesKeepTheirRowsOnASmallScreen() {
    const auto write = [&](const char* name) {
      probes::RunStoreWriter w(path(name));
      w.begin_run({R"({"model":"mlp","bucket_cap_mb":25.0})", 2, "mpi", "mlp"});
      for (int rank = 0; rank < 2; ++rank)
        gui::testing::write_iterations(w, rank, 1, 4);
      w.end_run("finished");
    };
    write("small_a.ddprun");
    write("small_b.ddprun");
    MainWindow window{QString()};
    window.resize(1024, 700);
    window.show();
    QVERIFY(window.openRun(QString::fromStdString(path("small_a.ddprun"))));
    QVERIFY(window.compareWith(QString::fromStdString(path("small_b.ddprun"))));
    window.showTab("Compare");
    QCoreApplication::processEvents();
    ComparePage* page = window.part<ComparePage>();
    for (TimelineView* t : {page->timelineA(), page->timelineB()}) {
      const QWidget* viewport = t->parentWidget();  // its scroll area's viewport
      QVERIFY2(viewport->height() >= 180, qPrintable(QString("a timeline %1 px high").arg(viewport->height())));
    }
  }

  // File > Compare opens its dialog in the open run's folder, where its neighbours are,
  // not in the workspace.
  void testTheCompareDialogOpensBesideTheRun() {
    QVERIFY(QDir().mkpath(scratch_file("elsewhere")));
    ddpscope::testing::write_known_iterations(path("elsewhere/a.ddprun"), 0.5, false, true);
    QTemporaryDir workspace;
    MainWindow window(workspace.path());
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.openRun(QString::fromStdString(path("elsewhere/a.ddprun"))));
    QAction* compare = nullptr;
    for (QAction* a : window.findChildren<QAction*>())
      if (a->text().startsWith("Co&mpare")) compare = a;
    QVERIFY(compare);
    QString shown;
    QTimer::singleShot(200, [&] {
      for (QWidget* w : QApplication::topLevelWidgets())
        if (auto* dialog = qobject_cast<QFileDialog*>(w); dialog && dialog->isVisible()) {
          shown = dialog->directory().absolutePath();
          dialog->reject();
        }
    });
    compare->trigger();
    QCOMPARE(shown, QFileInfo(QString::fromStdString(path("elsewhere/a.ddprun"))).absolutePath());
  }

  void testComparingWithoutARunOrWithABadOneSaysWhy() {
    ddpscope::testing::write_known_iterations(path("c.ddprun"), 0.5, false, false);
    MainWindow window{QString()};
    window.show();
    QVERIFY(!window.compareWith(QString::fromStdString(path("c.ddprun"))));
    QVERIFY2(window.part<QLabel>("errorBanner")->text().contains("no run is open"),
             qPrintable(window.part<QLabel>("errorBanner")->text()));
    QVERIFY(window.openRun(QString::fromStdString(path("c.ddprun"))));
    QVERIFY(!window.compareWith(QString::fromStdString(path("missing.ddprun"))));
    QVERIFY2(window.part<QLabel>("errorBanner")->text().contains("Cannot compare c.ddprun with"),
             qPrintable(window.part<QLabel>("errorBanner")->text()));
    QVERIFY(window.tabIsEmpty(QStringLiteral("compare")));
  }
};

DDPSCOPE_TEST_MAIN(TestComparePage)
#include "tst_compare_page.moc"
