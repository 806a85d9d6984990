// The Breakdown tab: where each rank's time goes, and the straggler named.
#include <QtTest/QtTest>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
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
#include <QStandardItemModel>
#include <QTableView>
#include <QTreeWidget>
#include <QDropEvent>
#include <QMimeData>
#include <QProcess>
#include <QProgressDialog>
#include <QStatusBar>
#include <QTemporaryDir>
#include <set>
#include "gui_test_runs.h"
#include "main_window.h"
#include "sort_proxy.h"
#include "time_breakdown_page.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestTimeBreakdownPage : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings go to a folder of the test's own, never the user's ~/.config.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // The Breakdown tab says where the time went, every rank side by
  // side, the straggler marked, tables sortable.
  void testBreakdownTabNamesTheStraggler() {
    QTemporaryDir folder;
    const QString file = folder.filePath("lag.ddprun");
    testing::write_test_run(file.toStdString(), 3, 6, "finished", 150);  // rank 2 lags
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    window.showTab("Breakdown");
    TimeBreakdownPage* page = window.part<TimeBreakdownPage>();
    QCOMPARE(page->bars()->rows().size(), size_t(3));
    QVERIFY2(page->headline()->text().contains("Straggler: rank 2"), qPrintable(page->headline()->text()));
    QCOMPARE(page->rankModel()->rowCount(), 3);
    QVERIFY(page->rankTable()->isSortingEnabled() && page->opsTable()->isSortingEnabled());
    QVERIFY(page->opsModel()->rowCount() >= 5);
    // One iteration: its rows, rank 2 still the straggler there.
    page->iterationChoice()->setCurrentIndex(page->iterationChoice()->findText("Iteration 3"));
    QCOMPARE(page->bars()->rows().size(), size_t(3));
    for (const auto& r : page->bars()->rows())
      QCOMPARE(r.iteration, int64_t(3));
    QVERIFY(page->headline()->text().contains("in iteration 3"));
    QVERIFY(page->headline()->text().contains("Straggler: rank 2"));
    // Sorting by exposed communication puts the rank that waits most first (by value,
    // not by the text "60 ns" < "9 ns").
    page->rankTable()->sortByColumn(4, Qt::DescendingOrder);
    const auto* sorted = page->rankTable()->model();
    for (int r = 1; r < sorted->rowCount(); ++r)
      QVERIFY(sorted->index(r - 1, 4).data(kSortRole).toDouble() >= sorted->index(r, 4).data(kSortRole).toDouble());
    page->rankTable()->sortByColumn(0, Qt::DescendingOrder);
    QCOMPARE(sorted->index(0, 0).data().toString(), QString("2"));
  }
};

DDPSCOPE_TEST_MAIN(TestTimeBreakdownPage)
#include "tst_time_breakdown_page.moc"
