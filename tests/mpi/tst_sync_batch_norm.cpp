// SyncBatchNorm under mpirun (2 and 4 ranks, each with a different batch size): its
// forward, input gradients, parameter gradients (summed over ranks) and running
// statistics equal BatchNorm1d's on the concatenated global batch, in train and eval; and
// under DDP with uneven inputs, join() is refused and join(throw_on_early_termination)
// raises on every rank.
#include <QtTest/QtTest>

#include "autograd/ops.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp/sync_batch_norm.h"
#include "mpi_test_main.h"
#include "test_helpers.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "tensor/kernels.h"

using namespace ddpscope;
using ddpscope::testing::relative_error;

namespace {

// Linear -> SyncBatchNorm -> Linear, for DDP.
class Net : public nn::Module {
 public:
  explicit Net(std::shared_ptr<c10d::ProcessGroup> group) {
    Generator g(4);
    in_ = register_module("in", std::make_shared<nn::Linear>(5, 8, true, &g));
    bn_ = register_module("bn", std::make_shared<ddp::SyncBatchNorm>(8, std::move(group)));
    out_ = register_module("out", std::make_shared<nn::Linear>(8, 1, true, &g));
  }
  std::string type_name() const override { return "Net"; }
  Tensor forward(const Tensor& x) override { return out_->forward(bn_->forward(in_->forward(x))); }

 private:
  std::shared_ptr<nn::Linear> in_, out_;
  std::shared_ptr<ddp::SyncBatchNorm> bn_;
};

}  // namespace

class TestSyncBatchNorm : public WorldTest {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

  // Rank r holds 2 + r samples (unequal batches); rows of the global batch, in rank order.
  int64_t rows_of(int r) const { return 2 + r; }
  int64_t first_row(int r) const {
    int64_t first = 0;
    for (int q = 0; q < r; ++q)
      first += rows_of(q);
    return first;
  }

 private slots:
  void initTestCase() { join_world(pg_); }

  void testEqualsBatchNormOnTheGlobalBatch() {
    constexpr int64_t kFeatures = 5;
    int64_t total = 0;
    for (int r = 0; r < size_; ++r)
      total += rows_of(r);
    Generator g(17);  // the same global data on every rank
    const Tensor global_x = mul_scalar(add_scalar(randn({total, kFeatures}, DType::F32, &g), 0.5), 3.0);
    const Tensor upstream = randn({total, kFeatures}, DType::F32, &g);  // dL/dy
    const Tensor gamma = randn({kFeatures}, DType::F32, &g), beta = randn({kFeatures}, DType::F32, &g);

    nn::BatchNorm1d reference(kFeatures);
    ddp::SyncBatchNorm synced(kFeatures, pg_);
    for (auto* m : {static_cast<nn::Module*>(&reference), static_cast<nn::Module*>(&synced)}) {
      const auto p = m->parameters();
      kernels::copy(p[0], gamma);
      kernels::copy(p[1], beta);
    }
    for (int step = 0; step < 3; ++step) {  // running statistics over several steps
      Tensor rx = global_x.detach().clone();
      rx.set_requires_grad(true);
      const Tensor ry = reference.forward(rx);
      sum(mul(ry, upstream)).backward();

      Tensor x = global_x.narrow(0, first_row(rank_), rows_of(rank_)).contiguous().clone();
      x.set_requires_grad(true);
      const Tensor y = synced.forward(x);
      sum(mul(y, upstream.narrow(0, first_row(rank_), rows_of(rank_)).contiguous())).backward();

      const Tensor ry_mine = ry.narrow(0, first_row(rank_), rows_of(rank_)).contiguous();
      QVERIFY2(relative_error(y, ry_mine) <= 1e-5, qPrintable(QString("output: %1").arg(relative_error(y, ry_mine))));
      const Tensor rg_mine = rx.grad().narrow(0, first_row(rank_), rows_of(rank_)).contiguous();
      QVERIFY2(relative_error(x.grad(), rg_mine) <= 1e-4,
               qPrintable(QString("input gradient: %1").arg(relative_error(x.grad(), rg_mine))));
      // Parameter gradients: each rank holds its samples' share; their sum is the whole.
      const auto sp = synced.parameters(), rp = reference.parameters();
      for (size_t i = 0; i < sp.size(); ++i) {
        Tensor summed = sp[i].grad().clone();
        pg_->allreduce(summed)->wait();
        QVERIFY2(
            relative_error(summed, rp[i].grad()) <= 1e-4,
            qPrintable(QString("%1 gradient: %2").arg(sp[i].name().c_str()).arg(relative_error(summed, rp[i].grad()))));
        sp[i].set_grad(Tensor());
        rp[i].set_grad(Tensor());
      }
    }
    QVERIFY(relative_error(synced.running_mean(), reference.running_mean()) <= 1e-5);
    QVERIFY(relative_error(synced.running_var(), reference.running_var()) <= 1e-5);
    // Eval: the running statistics, no collective.
    reference.eval();
    synced.eval();
    const Tensor x = global_x.narrow(0, first_row(rank_), rows_of(rank_)).contiguous();
    QVERIFY(relative_error(synced.forward(x),
                           reference.forward(global_x).narrow(0, first_row(rank_), rows_of(rank_)).contiguous()) <=
            1e-5);
  }

  // convert_sync_batchnorm: --batch-norm's MLP gets SyncBatchNorm in place of each
  // BatchNorm1d, with the same names, parameters and running statistics, and then
  // normalises each rank's rows with the global batch's statistics.
  void testConvertSyncBatchnorm() {
    Generator g(12);
    const nn::MlpConfig config{.in_features = 5, .width = 6, .depth = 3, .out_features = 2, .batch_norm = true};
    auto reference = std::make_shared<nn::Mlp>(config, &g);
    Generator g2(12);
    std::shared_ptr<nn::Module> converted = std::make_shared<nn::Mlp>(config, &g2);
    // Running statistics moved off their start, to see them carried over.
    Generator data(3);
    const Tensor warm = randn({7, 5}, DType::F32, &data);
    (void)reference->forward(warm);
    (void)converted->forward(warm);
    converted = ddp::convert_sync_batchnorm(converted, pg_);
    int synced = 0;
    for (const auto& [name, child] : converted->children().front().second->children())
      synced += child->type_name() == "SyncBatchNorm";
    QCOMPARE(synced, 2);
    const auto before = reference->state_dict(), after = converted->state_dict();
    QCOMPARE(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      QCOMPARE(after[i].first, before[i].first);
      QVERIFY2(relative_error(after[i].second, before[i].second) <= 0, after[i].first.c_str());
    }
    QCOMPARE(converted->named_parameters()[2].second.name(), std::string("layers.1.weight"));
    // Training mode: rank r's rows through the converted model equal those rows of the
    // reference over the whole global batch.
    int64_t total = 0;
    for (int r = 0; r < size_; ++r)
      total += rows_of(r);
    Generator batch(5);
    const Tensor global_x = randn({total, 5}, DType::F32, &batch);
    const Tensor mine = global_x.narrow(0, first_row(rank_), rows_of(rank_)).contiguous();
    const Tensor expected = reference->forward(global_x).narrow(0, first_row(rank_), rows_of(rank_)).contiguous();
    QVERIFY(relative_error(converted->forward(mine), expected) <= 1e-5);
    // A BatchNorm1d in a member of its own cannot be swapped; a lone one is returned new.
    class Holder : public nn::Module {
     public:
      Holder() { bn_ = register_module("bn", std::make_shared<nn::BatchNorm1d>(3)); }
      std::string type_name() const override { return "Holder"; }
      std::shared_ptr<nn::BatchNorm1d> bn_;
    };
    QVERIFY_THROWS_EXCEPTION(Error, ddp::convert_sync_batchnorm(std::make_shared<Holder>(), pg_));
    QCOMPARE(ddp::convert_sync_batchnorm(std::make_shared<nn::BatchNorm1d>(3), pg_)->type_name(),
             std::string("SyncBatchNorm"));
  }

  // Uneven inputs: join() cannot shadow SyncBatchNorm's collectives, so it is refused at
  // once (on every rank alike, before any collective), naming the module and the way out.
  void testJoinWithoutThrowIsRefused() {
    ddp::DistributedDataParallel model(std::make_shared<Net>(pg_), pg_, {});
    try {
      auto join = model.join();
      QFAIL("join() accepted a model with a SyncBatchNorm");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("module.bn is a SyncBatchNorm") &&
                   QString(e.what()).contains("throw_on_early_termination"),
               e.what());
    }
  }

  // With throw_on_early_termination every rank raises as soon as one runs out of inputs
  // (rank r has r + 1 batches), and no rank is left in a collective.
  void testJoinWithThrowRaisesOnEveryRank() {
    ddp::DistributedDataParallel model(std::make_shared<Net>(pg_), pg_, {});
    Generator data(9);
    const Tensor x = randn({4, 5}, DType::F32, &data), y = randn({4, 1}, DType::F32, &data);
    bool thrown = false;
    try {
      auto join = model.join(true, /*throw_on_early_termination=*/true);
      for (int i = 0; i < rank_ + 1; ++i)
        mse_loss(model.forward(x), y).backward();
      join->finish();
    } catch (const ddp::DistributedDataParallel::EarlyTermination& e) {
      thrown = true;
      QVERIFY2(QString(e.what()).contains("throw_on_early_termination"), e.what());
    }
    QVERIFY2(thrown, "every rank must stop with an error");
    Tensor one = Tensor::ones({1});
    pg_->allreduce(one)->wait();
    QCOMPARE(one.item<float>(), float(size_));
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestSyncBatchNorm)
#include "tst_sync_batch_norm.moc"
