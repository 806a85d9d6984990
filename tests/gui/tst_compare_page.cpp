// The Compare tab on real widgets (offscreen): two runs with known times side by side (the
// bars, the ops table with what changed, both timelines starting at their first compared
// iteration and moving together), and the errors a user can meet.
#include <QtTest/QtTest>

#include <QLabel>
#include <QTableView>

#include "compare_page.h"
#include "known_iterations_run.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "scratch_test.h"
#include "time_breakdown_page.h"
#include "timeline_view.h"

using namespace ddpscope;
using namespace ddpscope::gui;

class TestComparePage : public ScratchTest {
  Q_OBJECT
 private slots:
  void testTwoRunsSideBySide() {
    testing::write_known_iterations(path("a.ddprun"), 0.5, false, true);
    testing::write_known_iterations(path("b.ddprun"), 1.0, true, false, 6, 7'000'000);  // 7 ms later
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

  void testComparingWithoutARunOrWithABadOneSaysWhy() {
    testing::write_known_iterations(path("c.ddprun"), 0.5, false, false);
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

QTEST_MAIN(TestComparePage)
#include "tst_compare_page.moc"
