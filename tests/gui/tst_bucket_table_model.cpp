// The bucket table: one row per bucket of an iteration (none for an iteration the run
// lacks), and on a ZeRO run who updates each bucket's parameters.
#include <QtTest/QtTest>

#include <QAbstractItemModelTester>

#include "bucket_table_model.h"
#include "collective_bandwidth.h"
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
    QVERIFY(model.headerData(BucketTableModel::Ready, Qt::Horizontal).toString().contains("after\nbackward start"));
    QCOMPARE(model.index(1, BucketTableModel::Parameters).data().toString(), QString("1: b"));
    QCOMPARE(model.index(0, BucketTableModel::Parameters).data().toString(), QString("1: w"));
    QVERIFY(model.index(0, BucketTableModel::Bytes).data().toString().contains("4"));
    // Transfer: from the last rank's start of the same allreduce to this rank's end; bus
    // bandwidth from it (2 ranks: the allreduce's factor 2(n-1)/n is 1).
    int64_t last = 0;
    const ddpscope::probes::BucketTiming* mine = nullptr;
    for (const auto& t : run.analysis.buckets)
      if (t.iteration == 3 && t.bucket == 1) {
        last = std::max(last, t.start_ns);
        if (t.rank == 1) mine = &t;
      }
    QVERIFY(mine && mine->end_ns > last);
    QCOMPARE(model.index(1, BucketTableModel::Transfer).data(kSortRole).toDouble(), (mine->end_ns - last) * 1e-6);
    const double bus = static_cast<double>(mine->bytes) / static_cast<double>(mine->end_ns - last);
    QVERIFY(qAbs(model.index(1, BucketTableModel::BusBandwidth).data(kSortRole).toDouble() - bus) < 1e-9 * bus);
    QCOMPARE(model.index(1, BucketTableModel::BusBandwidth).data().toString(),
             QString::fromStdString(ddpscope::probes::rate_text(bus)));
    model.setRun(&run, 0, 99);  // no such iteration
    QCOMPARE(model.rowCount(), 0);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestBucketTableModel)
#include "tst_bucket_table_model.moc"
