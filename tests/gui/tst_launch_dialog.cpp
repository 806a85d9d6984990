// The launch dialog: it remembers the last job, offers a PyTorch script, explains bad
// input, keeps presets, asks the CLI before closing and keeps its width.
#include <QtTest/QtTest>

#include <sqlite3.h>

#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
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
#include <nlohmann/json.hpp>
#include <cmath>
#include <set>

#include "bucket_table_model.h"
#include "gui_test_runs.h"
#include "run_file_watch.h"
#include "run_store_reader.h"
#include "sqlite_db.h"
#include "graph_view.h"
#include "hang_view.h"
#include "bucket_fill_view.h"
#include "autograd_lesson_view.h"
#include "bucket_lesson_view.h"
#include "learn_page.h"
#include "ring_lesson_view.h"
#include "sequence_view.h"
#include "job_controller.h"
#include "launch_dialog.h"
#include "live_monitor.h"
#include "bucket_advice_view.h"
#include "main_window.h"
#include "ranks_page.h"
#include "summary_page.h"
#include "time_breakdown_page.h"
#include "shortcuts_dialog.h"
#include "sort_proxy.h"
#include "span_details.h"
#include "timeline_page.h"
#include "time_breakdown_page.h"
#include "time_format.h"
#include "timeline_view.h"
#include "track_layout.h"
#include <QStandardItemModel>
#include <QTableView>
#include <QTreeWidget>
#include "messages_page.h"
#include "overlap_model.h"
#include "run_list_model.h"
#include "run_open_job.h"
#include "timeline_view.h"
#include "trace_import_job.h"
#include <QDropEvent>
#include <QMimeData>
#include <QProcess>
#include <QProgressDialog>
#include <QStatusBar>
#include "test_registry.h"

using namespace ddpscope::gui;

class TestLaunchDialog : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  // The app's settings (the launch dialog's last job) go to a folder of the test's own,
  // never the user's ~/.config, and start empty.
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // Reopened, the launch dialog shows the last launched job's values.
  void testLaunchDialogRemembersTheLastJob() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    {
      LaunchDialog fresh;
      QCOMPARE(fresh.config().worldSize, LaunchConfig{}.worldSize);
      fresh.worldSizeBox()->setValue(3);
      fresh.extraArgumentsEdit()->setText("--lr 0.01");
      QPushButton* launch = nullptr;
      for (QPushButton* b : fresh.findChildren<QPushButton*>())
        if (b->text() == "Launch") launch = b;
      QVERIFY(launch);
      launch->click();
      QCOMPARE(fresh.result(), int(QDialog::Accepted));
    }
    LaunchDialog reopened;
    QCOMPARE(reopened.config().worldSize, 3);
    QCOMPARE(reopened.config().extraArguments, QString("--lr 0.01"));
    LaunchDialog cancelled;  // a cancelled dialog changes nothing
    cancelled.worldSizeBox()->setValue(4);
    cancelled.reject();
    QCOMPARE(LaunchDialog().config().worldSize, 3);
  }

  // A fault injected into the last job is not carried into the next, and the dialog says so
  // (issue 68: it silently kept --inject-stall).
  void testTheLastJobsFaultInjectionIsNotKept() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    {
      LaunchDialog fresh;
      fresh.extraArgumentsEdit()->setText("--lr 0.01 --inject-stall 1:5:30 --inject-slow=1:forward:20 --log-every 5");
      for (QPushButton* b : fresh.findChildren<QPushButton*>())
        if (b->text() == "Launch") b->click();
      QCOMPARE(fresh.result(), int(QDialog::Accepted));
    }
    LaunchDialog reopened;
    QCOMPARE(reopened.config().extraArguments, QString("--lr 0.01 --log-every 5"));
    QLabel* status = nullptr;
    for (QLabel* l : reopened.findChildren<QLabel*>())
      if (l->text().startsWith("The last job's fault injection")) status = l;
    QVERIFY2(status, "no word on the dropped injection");
    QCOMPARE(status->text(), QString("The last job's fault injection (--inject-stall 1:5:30, "
                                     "--inject-slow=1:forward:20) is not carried over: add it again to inject it."));
  }

  // "PyTorch script" shows the script's rows and hides the model's; its problems are
  // named there, and a good script can be launched.
  void testLaunchDialogOffersAPyTorchScript() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    LaunchDialog dialog;
    dialog.show();
    QVERIFY(dialog.rowShown("model") && !dialog.rowShown("script"));
    dialog.jobBox()->setCurrentIndex(dialog.jobBox()->findData("torch"));
    QVERIFY(dialog.rowShown("script") && dialog.rowShown("python") && dialog.rowShown("script_arguments"));
    QVERIFY(!dialog.rowShown("model") && !dialog.rowShown("bucket_cap_mb") && !dialog.rowShown("iterations"));
    QVERIFY(dialog.rowShown("world_size") && dialog.rowShown("hostfile"));
    QVERIFY(!dialog.canLaunch());
    QVERIFY(dialog.errorText("script").contains("the training script"));
    QCOMPARE(dialog.pythonEdit()->text(), defaultPython());
    QTemporaryDir folder;
    QFile script(folder.filePath("train.py"));
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write("import torch\n");
    script.close();
    dialog.scriptEdit()->setText(script.fileName());
    QVERIFY2(dialog.canLaunch(), qPrintable(dialog.errorText("script") + dialog.errorText("python")));
    dialog.pythonEdit()->setText("/no/python3");
    QVERIFY(dialog.errorText("python").contains("python with torch"));
    QCOMPARE(dialog.config().job, QString("torch"));
  }

  void testLaunchDialogExplainsBadInputAndKeepsPresets() {
    QTemporaryDir folder;
    LaunchDialog dialog;
    QVERIFY(dialog.canLaunch());
    QVERIFY(dialog.errorText("world_size").isEmpty());
    dialog.worldSizeBox()->setValue(0);
    QVERIFY(!dialog.canLaunch());
    QVERIFY(dialog.errorText("world_size").contains("between 1 and"));
    dialog.worldSizeBox()->setValue(2);
    dialog.hostfileEdit()->setText("/no/such/hostfile");
    QVERIFY(dialog.errorText("hostfile").contains("no such file"));
    QVERIFY(!dialog.canLaunch());
    dialog.hostfileEdit()->clear();
    dialog.modelBox()->setCurrentText("transformer");
    dialog.widthBox()->setValue(30);
    QVERIFY(dialog.errorText("width").contains("divisible"));
    dialog.widthBox()->setValue(32);
    dialog.extraArgumentsEdit()->setText("--out /tmp/x");
    QVERIFY(dialog.errorText("extra_arguments").contains("--out"));
    dialog.extraArgumentsEdit()->setText("--lr 0.01");
    QVERIFY(dialog.canLaunch());
    // The Launch button follows validity.
    QPushButton* launch = nullptr;
    for (auto* b : dialog.findChildren<QPushButton*>()) {
      if (b->text() == "Launch") launch = b;
    }
    QVERIFY(launch && launch->isEnabled());
    dialog.worldSizeBox()->setValue(0);
    QVERIFY(!launch->isEnabled());
    dialog.worldSizeBox()->setValue(3);

    const QString preset = folder.filePath("p.json");
    QVERIFY(dialog.savePresetTo(preset));
    LaunchDialog other;
    QVERIFY(other.loadPresetFrom(preset));
    QCOMPARE(toJson(other.config()), toJson(dialog.config()));
    QCOMPARE(other.config().worldSize, 3);
    QCOMPARE(other.config().model, QString("transformer"));
    QFile bad(folder.filePath("bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("[1, 2]");
    bad.close();
    QVERIFY(!other.loadPresetFrom(bad.fileName()));
    QCOMPARE(other.config().worldSize, 3);  // unchanged
  }

  // Extra arguments the fields cannot check are checked by ddpscope-cli when Launch is
  // pressed (issue 34 point 6): the dialog stays open with the CLI's words beside them.
  void testLaunchDialogAsksTheCliBeforeClosing() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    QTemporaryDir folder;
    JobController job(nullptr, DDPSCOPE_CLI_PATH);
    LaunchDialog dialog;
    dialog.setLaunchCheck(
        [&](const LaunchConfig& c) { return job.checkArguments(c, folder.filePath("check.ddprun")); });
    dialog.extraArgumentsEdit()->setText("--bogus 3");
    QVERIFY(dialog.canLaunch());  // nothing the fields know is wrong
    QPushButton* launch = nullptr;
    for (QPushButton* b : dialog.findChildren<QPushButton*>())
      if (b->text() == "Launch") launch = b;
    QVERIFY(launch);
    launch->click();
    QVERIFY(dialog.result() != int(QDialog::Accepted));
    QVERIFY2(dialog.errorText("extra_arguments").contains("--bogus"), qPrintable(dialog.errorText("extra_arguments")));
    QVERIFY(QDir(folder.path()).entryList(QDir::Files).isEmpty());  // the check wrote nothing
    dialog.extraArgumentsEdit()->setText("--lr 0.01");
    QVERIFY(dialog.errorText("extra_arguments").isEmpty());
    launch->click();
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
  }

  // The dialog keeps its width when opened again, and a long refusal wraps instead of
  // stretching it (issue 34 point 6).
  void testLaunchDialogKeepsItsWidth() {
    QSettings().remove(LaunchDialog::kLastConfigKey);
    int first = 0;
    for (int opening = 0; opening < 3; ++opening) {
      LaunchDialog dialog;
      dialog.show();
      QVERIFY(QTest::qWaitForWindowExposed(&dialog));
      if (opening == 0) first = dialog.width();
      QCOMPARE(dialog.width(), first);
      dialog.setLaunchCheck([](const LaunchConfig&) {
        return QString("The following arguments were not expected: --bogus 3 --more words of the CLI's own. ")
            .repeated(3);
      });
      for (QPushButton* b : dialog.findChildren<QPushButton*>())
        if (b->text() == "Launch") b->click();
      QVERIFY(!dialog.errorText("extra_arguments").isEmpty());
      QTest::qWait(20);
      // At most the error column's cap (320 px) wider: the reason wraps (it was 1962 px).
      QVERIFY2(dialog.width() <= first + 320, qPrintable(QString("%1 -> %2").arg(first).arg(dialog.width())));
      dialog.extraArgumentsEdit()->setText("--lr 0.01");  // the next opening remembers this job
      dialog.setLaunchCheck({});
      for (QPushButton* b : dialog.findChildren<QPushButton*>())
        if (b->text() == "Launch") b->click();
    }
  }
};

DDPSCOPE_TEST_MAIN(TestLaunchDialog)
#include "tst_launch_dialog.moc"
