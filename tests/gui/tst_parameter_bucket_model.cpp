// The parameter table: each parameter's bucket and the order gradients became ready, and
// on a ZeRO run each parameter's owner with its colour and the optimizer state per rank.
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

class TestParameterBucketModel : public ScratchTest {
  Q_OBJECT

 private slots:

  void testBucketReadyOrderAndParameterMap() {
    const std::string file = path("rebuilt.ddprun");
    testing::write_test_run(file, 1, 3, "finished", 0, true);
    const RunData run = loadRun(file);
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

  // A ZeRO run: rank 0 owns w, rank 1 owns b. The parameter table names and colours each
  // one's owner, the bucket table says who updates each bucket's parameters, and the
  // optimizer-state bytes per rank are the last recorded ones.
  void testZeroOwners() {
    const std::string file = path("zero.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      for (int rank = 0; rank < 2; ++rank) {
        testing::write_iterations(w, rank, 1, 3);
        ddpscope::probes::EventBatch b;
        b.rank = rank;
        b.records = {R"j({"type":"zero_partition","world_size":2,"params":[[0,"w",1024,0],[1,"b",32,1]]})j",
                     R"j({"type":"metric","iteration":2,"name":"optimizer_state_bytes","value":99})j",
                     rank == 0 ? R"j({"type":"metric","iteration":3,"name":"optimizer_state_bytes","value":8192})j"
                               : R"j({"type":"metric","iteration":3,"name":"optimizer_state_bytes","value":256})j"};
        w.write(b);
      }
      w.end_run("finished");
    }
    const RunData run = loadRun(file);
    QCOMPARE(int(run.zero_shards.size()), 2);
    QCOMPARE(optimizerStateBytes(run), (std::vector<std::pair<int, int64_t>>{{0, 8192}, {1, 256}}));
    const auto state = optimizerStateRows(run);
    QCOMPARE(int(state.size()), 2);
    QCOMPARE(state[0].owned_parameters, 1);
    QCOMPARE(state[0].owned_elements, int64_t{1024});
    QCOMPARE(state[1].owned_elements, int64_t{32});
    ParameterBucketModel params;
    params.setRun(&run, 1);
    QVERIFY(params.sharded());
    QCOMPARE(params.index(0, ParameterBucketModel::Owner).data().toString(), QString("rank 0"));
    QCOMPARE(params.index(1, ParameterBucketModel::Owner).data().toString(), QString("rank 1"));
    // Each owner is marked in its rank's colour, the colour the charts give that rank.
    QCOMPARE(params.index(1, ParameterBucketModel::Name).data(Qt::DecorationRole).value<QColor>(), rankColor(1));
    QCOMPARE(params.index(0, ParameterBucketModel::Owner).data(Qt::DecorationRole).value<QColor>(), rankColor(0));
    QVERIFY(!params.index(0, ParameterBucketModel::Name).data(Qt::BackgroundRole).isValid());
    BucketTableModel buckets;
    buckets.setRun(&run, 0, 2);
    QCOMPARE(buckets.index(0, BucketTableModel::Owners).data().toString(), QString("rank 0: 1"));
    QCOMPARE(buckets.index(1, BucketTableModel::Owners).data().toString(), QString("rank 1: 1"));
    // Without ZeRO: nothing to show.
    const std::string plain = path("plain.ddprun");
    testing::write_test_run(plain, 1, 2);
    const RunData p = loadRun(plain);
    params.setRun(&p, 0);
    QVERIFY(!params.sharded());
    QCOMPARE(params.index(0, ParameterBucketModel::Owner).data().toString(), QString("–"));
    QVERIFY(!params.index(0, ParameterBucketModel::Name).data(Qt::BackgroundRole).isValid());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestParameterBucketModel)
#include "tst_parameter_bucket_model.moc"
