// The main window on the offscreen platform: opens a run from a real run file and fills
// its views; a bad file is explained, not thrown through the event loop.
#include <QtTest/QtTest>

#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>

#include "bucket_table_model.h"
#include "gui_test_runs.h"
#include "main_window.h"
#include "overlap_model.h"
#include "run_list_model.h"

using namespace ddpscope::gui;

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void testOpensARunAndFillsTheViews() {
    QTemporaryDir folder;
    const QString file = folder.filePath("job.ddprun");
    testing::write_test_run(file.toStdString(), 2, 6);
    MainWindow window(folder.path());
    window.show();
    QCOMPARE(window.runList()->rowCount(), 1);
    QVERIFY(window.openRun(file));
    QVERIFY(window.currentRun());
    QCOMPARE(window.tabs()->count(), 3);
    QCOMPARE(window.overlapModel()->rowCount(), 6);  // rank 0's iterations
    QCOMPARE(window.bucketModel()->rowCount(), 2);   // iteration 2 of rank 0
    QVERIFY(window.windowTitle().contains("job.ddprun"));
  }

  void testBadFileIsExplained() {
    QTemporaryDir folder;
    const QString good = folder.filePath("good.ddprun");
    testing::write_test_run(good.toStdString(), 1, 2);
    const QString bad = folder.filePath("bad.ddprun");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(1000, 'q'));
    f.close();
    MainWindow window(folder.path());
    QVERIFY(window.openRun(good));
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.openRun(bad));
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains("not a ddpscope run file"));
    QVERIFY(window.currentRun());  // the good run stays open
    QVERIFY(!window.openRun(folder.filePath("missing.ddprun")));
  }
};

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
