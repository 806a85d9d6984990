// The app at first sight (issue 34), on real widgets (offscreen): what a newcomer meets
// on first clicks. The Learn tab, first shown, has the lesson its box names loaded, so
// Play and the arrow keys work at once; the run list lists and selects the run shown,
// wherever its file lives.
#include <QtTest/QtTest>

#include <QComboBox>
#include <QTableView>
#include <QTabWidget>
#include <QTemporaryDir>

#include "gui_test_runs.h"
#include "learn_page.h"
#include "main_window.h"
#include "run_list_model.h"

using namespace ddpscope::gui;

class TestFirstSight : public QObject {
  Q_OBJECT
 private slots:
  void testLearnTabIsReadyWhenFirstShown() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.resize(1280, 800);
    window.show();
    LearnPage* page = window.learnPage();
    QVERIFY(page->lesson().steps.empty());  // nothing loaded before the tab is opened
    window.showTab(QStringLiteral("learn"));
    QApplication::processEvents();
    QVERIFY(page->lesson().steps.size() > 20);
    QCOMPARE(page->lessonBox()->currentIndex(), 0);
    QTest::keyClick(page, Qt::Key_Right);
    QTest::keyClick(page, Qt::Key_Right);
    QCOMPARE(page->applied(), size_t{2});
    // Leaving and coming back keeps the student's place.
    window.showTab(QStringLiteral("summary"));
    window.showTab(QStringLiteral("learn"));
    QCOMPARE(page->applied(), size_t{2});
  }

  void testTheRunListShowsTheRunOpenWhereverItLives() {
    QTemporaryDir workspace, elsewhere;
    const QString inside = workspace.filePath("inside.ddprun"), outside = elsewhere.filePath("outside.ddprun");
    testing::write_test_run(inside.toStdString(), 2, 3);
    testing::write_test_run(outside.toStdString(), 2, 4);
    MainWindow window(workspace.path());
    window.show();
    QCOMPARE(window.runList()->rowCount(), 1);
    QVERIFY(window.openRun(outside));
    // Listed first, marked, and the selected row.
    QCOMPARE(window.runList()->rowCount(), 2);
    QCOMPARE(window.runList()->index(0, 0).data(RunListModel::PathRole).toString(), outside);
    QVERIFY(window.runList()->index(0, 0).data().toString().contains("outside the workspace"));
    QVERIFY(window.runList()->isOutside(0));
    const auto selected = [&] {
      const QModelIndexList rows = window.runsView()->selectionModel()->selectedRows();
      return rows.size() == 1 ? rows[0].data(RunListModel::PathRole).toString() : QString();
    };
    QCOMPARE(selected(), outside);
    // Another run opened: it is selected, the outside one stays listed (a refresh too).
    QVERIFY(window.openRun(inside));
    QCOMPARE(selected(), inside);
    window.runList()->refresh();
    QCOMPARE(window.runList()->rowCount(), 2);
    QCOMPARE(selected(), inside);
  }
};

QTEST_MAIN(TestFirstSight)
#include "tst_first_sight.moc"
