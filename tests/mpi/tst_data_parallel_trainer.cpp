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
    apps::TrainOptions o{.model = model.toStdString(),
                         .iters = 5,
                         .batch = 8,
                         .width = 32,
                         .depth = 2,
                         .heads = 2,
                         .context = 8};
    o.overlap = overlap;
    apps::Trainer trainer(o, pg_);
    double loss = 0;
    for (int i = 0; i < 5; ++i)
      loss = trainer.step().loss;
    QVERIFY(std::isfinite(loss));
    for (const Tensor& p : trainer.model().parameters()) {
      const auto copies = gather(p);
      for (int r = 1; r < pg_->size(); ++r) {
        QVERIFY2(
            kernels::max_abs_diff(copies[r], copies[0]) == 0.0,
            qPrintable(
                QString("%1 differs between rank 0 and rank %2").arg(p.name().c_str()).arg(r)));
      }
    }
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
