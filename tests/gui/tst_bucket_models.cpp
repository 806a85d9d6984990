// The Buckets page's models: one iteration's buckets with their times from backward's
// start, and the order parameters became ready with the bucket each belongs to.
#include <QtTest/QtTest>

#include <QAbstractItemModelTester>

#include "bucket_table_model.h"
#include "sort_proxy.h"
#include "gui_test_runs.h"
#include "parameter_bucket_model.h"
#include "run_data.h"
#include "scratch_test.h"

using namespace ddpscope::gui;

class TestBucketModels : public ScratchTest {
  Q_OBJECT

 private slots:
  void testBucketTableOfOneIteration() {
    const std::string file = path("buckets.ddprun");
    testing::write_test_run(file, 2, 4);
    const RunData run = load_run(file);
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

  void testBucketReadyOrderAndParameterMap() {
    const std::string file = path("rebuilt.ddprun");
    testing::write_test_run(file, 1, 3, "finished", 0, true);
    const RunData run = load_run(file);
    BucketTableModel buckets;
    QAbstractItemModelTester t1(&buckets, QAbstractItemModelTester::FailureReportingMode::QtTest);
    buckets.setRun(&run, 0, 2);
    // Only bucket 1 records a ready instant: it is first ready; bucket 0 never is.
    QCOMPARE(buckets.index(1, BucketTableModel::ReadyOrder).data().toInt(), 1);
    QCOMPARE(buckets.index(0, BucketTableModel::ReadyOrder).data().toString(), QString("–"));
    ParameterBucketModel params;
    QAbstractItemModelTester t2(&params, QAbstractItemModelTester::FailureReportingMode::QtTest);
    params.setRun(&run, 0);
    QVERIFY(params.rebuilt());
    QCOMPARE(params.rowCount(), 2);
    QCOMPARE(params.index(0, ParameterBucketModel::Name).data().toString(), QString("w"));
    QCOMPARE(params.index(0, ParameterBucketModel::Shape).data().toString(), QString("f32[32,32]"));
    QCOMPARE(params.index(0, ParameterBucketModel::BucketBefore).data().toInt(), 0);
    QCOMPARE(params.index(0, ParameterBucketModel::BucketAfter).data().toInt(), 1);
    QCOMPARE(params.index(1, ParameterBucketModel::BucketAfter).data().toInt(), 0);
    QVERIFY(params.index(0, ParameterBucketModel::Bytes).data().toString().contains("4"));
    params.setRun(nullptr, 0);
    QCOMPARE(params.rowCount(), 0);
  }
};

QTEST_GUILESS_MAIN(TestBucketModels)
#include "tst_bucket_models.moc"
