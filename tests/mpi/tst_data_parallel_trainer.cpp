// The data-parallel Trainer under mpirun: ranks draw different batches yet keep
// identical parameters, because gradients are averaged after every backward.
#include <QtTest/QtTest>

#include "apps/trainer.h"
#include "c10d/process_group.h"
#include "mpi_test_main.h"
#include "tensor/kernels.h"

using namespace ddpscope;

class TestDataParallelTrainer : public QObject {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

  // Every rank's copy of `t`, gathered.
  std::vector<Tensor> gather(const Tensor& t) {
    std::vector<Tensor> all;
    for (int r = 0; r < pg_->size(); ++r)
      all.push_back(Tensor::zeros(t.sizes(), t.dtype()));
    pg_->allgather(all, t.contiguous())->wait();
    return all;
  }

 private slots:
  void initTestCase() { pg_ = c10d::init_process_group({.backend = "mpi"}); }

  void testReplicasStayIdentical_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("overlap");
    QTest::newRow("mlp, DDP") << "mlp" << true;
    QTest::newRow("mlp, allreduce after backward") << "mlp" << false;
    QTest::newRow("transformer, DDP") << "transformer" << true;
  }
  void testReplicasStayIdentical() {
    QFETCH(QString, model);
    QFETCH(bool, overlap);
    apps::TrainOptions o{
        .model = model.toStdString(), .iters = 5, .batch = 8, .width = 32, .depth = 2, .heads = 2, .context = 8};
    o.overlap = overlap;
    apps::Trainer trainer(o, pg_);
    double loss = 0;
    for (int i = 0; i < 5; ++i)
      loss = trainer.step().loss;
    QVERIFY(std::isfinite(loss));
    for (const Tensor& p : trainer.model().parameters()) {
      const auto copies = gather(p);
      for (int r = 1; r < pg_->size(); ++r) {
        QVERIFY2(kernels::max_abs_diff(copies[r], copies[0]) == 0.0,
                 qPrintable(QString("%1 differs between rank 0 and rank %2").arg(p.name().c_str()).arg(r)));
      }
    }
  }

  // --fused-optimizer steps each bucket's parameters inside backward; the parameters and
  // losses must be bit for bit those of one step after backward.
  void testFusedOptimizerEqualsStepAfterBackward_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<double>("capMb");
    QTest::addColumn<bool>("findUnused");
    QTest::addColumn<bool>("bucketView");
    QTest::newRow("mlp, sgd momentum, a bucket per parameter") << "mlp"
                                                               << "sgd" << 0.0001 << false << false;
    QTest::newRow("mlp, adam, one bucket") << "mlp"
                                           << "adam" << 25.0 << false << false;
    QTest::newRow("mlp, sgd, find_unused_parameters") << "mlp"
                                                      << "sgd" << 0.002 << true << false;
    QTest::newRow("transformer, adamw, gradient_as_bucket_view") << "transformer"
                                                                 << "adamw" << 0.01 << false << true;
  }
  void testFusedOptimizerEqualsStepAfterBackward() {
    QFETCH(QString, model);
    QFETCH(QString, optimizer);
    QFETCH(double, capMb);
    QFETCH(bool, findUnused);
    QFETCH(bool, bucketView);
    auto options = [&](bool fused) {
      apps::TrainOptions o{.model = model.toStdString(),
                           .iters = 4,
                           .batch = 8,
                           .width = 32,
                           .depth = 3,
                           .heads = 2,
                           .context = 8,
                           .optimizer = optimizer.toStdString()};
      o.bucket_cap_mb = o.first_bucket_cap_mb = capMb;
      o.find_unused_parameters = findUnused;
      o.gradient_as_bucket_view = bucketView;
      o.fused_optimizer = fused;
      return o;
    };
    apps::Trainer plain(options(false), pg_), fused(options(true), pg_);
    const size_t n_params = fused.model().parameters().size();
    for (int i = 0; i < 4; ++i) {
      const double a = plain.step().loss, b = fused.step().loss;
      QCOMPARE(b, a);
      QCOMPARE(plain.parameters_stepped_in_backward(), size_t{0});
      QCOMPARE(fused.parameters_stepped_in_backward(), n_params);
    }
    const auto p = plain.model().parameters(), f = fused.model().parameters();
    QCOMPARE(f.size(), p.size());
    for (size_t i = 0; i < p.size(); ++i)
      QVERIFY2(kernels::max_abs_diff(p[i], f[i]) == 0.0, p[i].name().c_str());
  }

  // A single process has no DDP and no bucket to step with: the optimizer steps after
  // backward as usual. With --no-overlap (no buckets either) the flag is refused.
  void testFusedOptimizerWithoutDdpStepsAfterBackward() {
    apps::TrainOptions o{.model = "mlp", .iters = 2, .batch = 4, .width = 8, .depth = 2};
    o.fused_optimizer = true;
    o.overlap = false;
    QVERIFY_THROWS_EXCEPTION(Error, apps::Trainer(o, pg_));
    o.overlap = true;
    apps::Trainer trainer(o);
    const Tensor before = trainer.model().parameters()[0].clone();
    trainer.step();
    QCOMPARE(trainer.parameters_stepped_in_backward(), size_t{0});
    QVERIFY(kernels::max_abs_diff(before, trainer.model().parameters()[0]) > 0);
  }

  void testLossIsTheGroupAverage() {
    apps::TrainOptions o{.model = "mlp", .iters = 1, .batch = 4, .width = 8, .depth = 1};
    apps::Trainer trainer(o, pg_);
    const double reported = trainer.step().loss;
    Tensor mine = Tensor::scalar(reported, DType::F64);
    const auto all = gather(mine.view({1}));
    for (const Tensor& t : all)
      QCOMPARE(t.item<double>(), reported);  // every rank reports the same
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestDataParallelTrainer)
#include "tst_data_parallel_trainer.moc"
