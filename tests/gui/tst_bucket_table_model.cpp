// The bucket table: one row per bucket of an iteration (none for an iteration the run
// lacks), and on a ZeRO run who updates each bucket's parameters.
#include <QtTest/QtTest>

#include <QAbstractItemModelTester>

#include "bucket_table_model.h"
#include "sort_proxy.h"
#include "gui_test_runs.h"
#include "category_palette.h"
#include "parameter_bucket_model.h"
#include "run_data.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestBucketTableModel : public ScratchTest {
  Q_OBJECT

 private slots:

  void testBucketTableOfOneIteration() {
    const std::string file = path("buckets.ddprun");
    testing::write_test_run(file, 2, 4);
    const RunData run = loadRun(file);
    BucketTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(&run, 1, 3);
    QCOMPARE(model.rowCount(), 2);
    // Times are from the start of backward (iteration 3's at 2200 ns), with units; the
    // queue delay is from ready to start; kSortRole gives ns.
    QCOMPARE(model.index(1, BucketTableModel::Bucket).data().toInt(), 1);
    QCOMPARE(model.index(1, BucketTableModel::Ready).data().toString(), QString("440 ns"));
    QCOMPARE(model.index(1, BucketTableModel::QueueDelay).data().toString(), QString("10 ns"));
    QCOMPARE(model.index(1, BucketTableModel::QueueDelay).data(kSortRole).toLongLong(), 10);
    QCOMPARE(model.index(0, BucketTableModel::Start).data().toString(), QString("100 ns"));
    QCOMPARE(model.index(0, BucketTableModel::QueueDelay).data().toString(), QString());  // never marked ready
    QCOMPARE(model.index(1, BucketTableModel::Duration).data(kSortRole).toLongLong(), 110);
    QVERIFY(model.headerData(BucketTableModel::Ready, Qt::Horizontal).toString().contains("after backward start"));
    QCOMPARE(model.index(1, BucketTableModel::Parameters).data().toString(), QString("1: b"));
    QCOMPARE(model.index(0, BucketTableModel::Parameters).data().toString(), QString("1: w"));
    QVERIFY(model.index(0, BucketTableModel::Bytes).data().toString().contains("4"));
    model.setRun(&run, 0, 99);  // no such iteration
    QCOMPARE(model.rowCount(), 0);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestBucketTableModel)
#include "tst_bucket_table_model.moc"
