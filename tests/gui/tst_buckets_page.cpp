// The Buckets tab numbers iterations as the run does: a trace's 551 and 552, not 1 and 2.
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
#include "gui_test_runs.h"
#include "bucket_advice_view.h"
#include "chart_title.h"
#include "main_window.h"
#include "buckets_page.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestBucketsPage : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings go to a folder of the test's own, never the user's ~/.config.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // The Iteration box numbers iterations as the run does: a trace's 551 and 552, not 1 and 2.
  void testIterationsAsTheRunNumbersThem() {
    QTemporaryDir folder;
    const QString file = folder.filePath("late.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      testing::write_iterations(w, 0, 551, 552);
    }
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    window.showTab("Buckets");
    QSpinBox* box = window.part<BucketsPage>()->findChild<QSpinBox*>();
    QVERIFY(box);
    QCOMPARE(box->minimum(), 551);
    QCOMPARE(box->maximum(), 552);
    QCOMPARE(box->value(), 552);
  }
};

DDPSCOPE_TEST_MAIN(TestBucketsPage)
#include "tst_buckets_page.moc"
