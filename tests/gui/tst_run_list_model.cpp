// The run list: every run file of a folder with its status, size and model; a file that is
// no run says why; a new run appears on refresh.
#include <QtTest/QtTest>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QTemporaryDir>

#include "gui_test_runs.h"
#include "run_list_model.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestRunListModel : public ScratchTest {
  Q_OBJECT

 private slots:
  void testRunListShowsEveryRunAndExplainsBadOnes() {
    QTemporaryDir folder;
    testing::write_test_run(folder.filePath("a.ddprun").toStdString(), 2, 3);
    testing::write_test_run(folder.filePath("b.ddprun").toStdString(), 4, 2, "failed");
    QFile garbage(folder.filePath("c.ddprun"));
    QVERIFY(garbage.open(QIODevice::WriteOnly));
    garbage.write(QByteArray(4096, 'x'));
    garbage.close();
    RunListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setFolder(folder.path());
    QCOMPARE(model.rowCount(), 3);
    QMap<QString, int> rowOf;
    for (int r = 0; r < model.rowCount(); ++r)
      rowOf[model.index(r, RunListModel::Name).data().toString()] = r;
    QCOMPARE(model.index(rowOf["a"], RunListModel::Status).data().toString(), QString("finished"));
    QCOMPARE(model.index(rowOf["a"], RunListModel::WorldSize).data().toInt(), 2);
    QCOMPARE(model.index(rowOf["a"], RunListModel::Model).data().toString(), QString("mlp"));
    QVERIFY(!model.index(rowOf["a"], RunListModel::Started).data().toString().isEmpty());
    QCOMPARE(model.index(rowOf["b"], RunListModel::Status).data().toString(), QString("failed"));
    QCOMPARE(model.index(rowOf["c"], RunListModel::Status).data().toString(), QString("unreadable"));
    QVERIFY(model.index(rowOf["c"], RunListModel::Name)
                .data(Qt::ToolTipRole)
                .toString()
                .contains("not a ddpscope run file"));
    QCOMPARE(model.index(0, 0).data(RunListModel::PathRole).toString().isEmpty(), false);
    // A new run appears on refresh.
    testing::write_test_run(folder.filePath("d.ddprun").toStdString(), 1, 1);
    model.refresh();
    QCOMPARE(model.rowCount(), 4);
    // A run from elsewhere: listed first under its name, marked by an icon whose tooltip
    // says where it is, not by words that take the column's width.
    QTemporaryDir elsewhere;
    const QString far = elsewhere.filePath("far-away-run.ddprun");
    testing::write_test_run(far.toStdString(), 1, 1);
    model.addOutside(far);
    QCOMPARE(model.index(0, RunListModel::Name).data().toString(), QString("far-away-run"));
    QVERIFY(!model.index(0, RunListModel::Name).data(Qt::DecorationRole).value<QImage>().isNull());
    const QStringList tip = model.index(0, RunListModel::Name).data(Qt::ToolTipRole).toString().split('\n');
    QCOMPARE(tip.value(0), QString("Outside the workspace: %1").arg(QFileInfo(far).absoluteFilePath()));
    // Then the row's other columns, which a narrow list hides.
    const QString status = model.index(0, RunListModel::Status).data().toString();
    QVERIFY2(!status.isEmpty() && tip.value(1).startsWith(status + " · 1 rank"), qPrintable(tip.join(" | ")));
    QVERIFY2(tip.value(1).contains("started " + model.index(0, RunListModel::Started).data().toString()),
             qPrintable(tip.join(" | ")));
    QVERIFY(!model.index(1, RunListModel::Name).data(Qt::DecorationRole).isValid());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunListModel)
#include "tst_run_list_model.moc"
