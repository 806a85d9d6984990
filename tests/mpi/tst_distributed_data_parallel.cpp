// DistributedDataParallel under mpirun (2 and 4 ranks): N ranks with batch b give the
// gradients of one process with batch N*b, and the same parameters after 10 SGD steps;
// join for uneven inputs, no_sync, per-iteration figures, buffers from rank 0,
// mismatched models named.
#include <QtTest/QtTest>

#include "c10d/process_group.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp_test_models.h"
#include "mpi_test_main.h"
#include "test_helpers.h"
#include "optim/optimizer.h"
#include "tensor/kernels.h"

using namespace ddpscope;
using namespace ddpscope::testing;

class TestDistributedDataParallel : public QObject {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

 private slots:
  void initTestCase() { pg_ = c10d::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(120)}); }

  void testEquivalenceWithOneProcess_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("as_view");
    QTest::newRow("mlp") << "mlp" << false;
    QTest::newRow("mlp, gradient_as_bucket_view") << "mlp" << true;
    QTest::newRow("transformer") << "transformer" << false;
  }

  void testEquivalenceWithOneProcess() {
    QFETCH(QString, model);
    QFETCH(bool, as_view);
    const Task t = task(model);
    const int n = pg_->size();
    const int64_t b = 4;
    auto reference = t.build();
    auto local = t.build();
    // Small caps so the model spans several buckets.
    ddp::DistributedDataParallel ddp(
        local, pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001, .gradient_as_bucket_view = as_view});
    QVERIFY2(ddp.buckets().size() >= 3, qPrintable(QString("only %1 buckets").arg(ddp.buckets().size())));
    optim::SGD ref_opt(reference->parameters(), {.lr = 0.05});
    optim::SGD ddp_opt(ddp.parameters(), {.lr = 0.05});
    Generator data(99);  // same global batches on every rank
    for (int step = 0; step < 10; ++step) {
      auto [x, y] = t.batch(data, n * b);
      ref_opt.zero_grad();
      t.loss(reference->forward(x), y).backward();
      ddp_opt.zero_grad();
      t.loss(ddp.forward(slice(x, pg_->rank(), b)), slice(y, pg_->rank(), b)).backward();
      if (step == 0) {
        const auto rp = reference->parameters(), dp = ddp.parameters();
        for (size_t i = 0; i < rp.size(); ++i) {
          const double err = relative_error(dp[i].grad(), rp[i].grad());
          QVERIFY2(err <= 1e-5,
                   qPrintable(QString("gradient of %1: relative error %2").arg(dp[i].name().c_str()).arg(err)));
          if (as_view) {
            QVERIFY2(dp[i].grad().storage() != nullptr && dp[i].grad().is_contiguous(), "grad view");
          }
        }
      }
      ref_opt.step();
      ddp_opt.step();
    }
    const auto rp = reference->parameters(), dp = ddp.parameters();
    for (size_t i = 0; i < rp.size(); ++i) {
      const double err = relative_error(dp[i], rp[i]);
      QVERIFY2(
          err <= 1e-5,
          qPrintable(QString("parameter %1 after 10 steps: relative error %2").arg(dp[i].name().c_str()).arg(err)));
    }
  }

  void testJoinWithUnevenInputs_data() {
    QTest::addColumn<bool>("divide_by_initial");
    QTest::newRow("divide by initial world size") << true;
    QTest::newRow("divide by ranks still training") << false;
  }

  void testJoinWithUnevenInputs() {
    QFETCH(bool, divide_by_initial);
    const Task t = task("mlp");
    const int n = pg_->size();
    // Rank r has r + 2 batches; all batches are drawn alike on every rank.
    Generator data(31);
    std::vector<std::vector<std::pair<Tensor, Tensor>>> batches(n + 1);
    for (int i = 0; i < n + 1; ++i) {
      for (int r = 0; r < n; ++r)
        batches[i].push_back(t.batch(data, 3));
    }
    auto reference = t.build();
    optim::SGD ref_opt(reference->parameters(), {.lr = 0.05});
    std::vector<std::vector<Tensor>> snapshots;  // reference parameters after each iteration
    for (int i = 0; i < n + 1; ++i) {
      const int training = n - std::max(0, i - 1);  // ranks with more than i batches
      ref_opt.zero_grad();
      Tensor total;
      for (int r = 0; r < n; ++r) {
        if (i >= r + 2) continue;
        Tensor l = t.loss(reference->forward(batches[i][r].first), batches[i][r].second);
        total = total.defined() ? add(total, l) : l;
      }
      mul_scalar(total, 1.0 / (divide_by_initial ? n : training)).backward();
      ref_opt.step();
      std::vector<Tensor> snap;
      for (auto& p : reference->parameters())
        snap.push_back(p.clone());
      snapshots.push_back(snap);
    }
    ddp::DistributedDataParallel ddp(t.build(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    optim::SGD opt(ddp.parameters(), {.lr = 0.05});
    const int mine = pg_->rank() + 2;
    {
      auto join = ddp.join(divide_by_initial);
      for (int i = 0; i < mine; ++i) {
        opt.zero_grad();
        t.loss(ddp.forward(batches[i][pg_->rank()].first), batches[i][pg_->rank()].second).backward();
        opt.step();
      }
      join->finish();  // shadows the iterations of the ranks with more batches
    }
    // Every rank ends with the model of the last to join (PyTorch's join post-hook): the
    // reference after every iteration, not this rank's own last one.
    const auto dp = ddp.parameters();
    for (size_t k = 0; k < dp.size(); ++k) {
      const double err = relative_error(dp[k], snapshots.back()[k]);
      QVERIFY2(
          err <= 1e-5,
          qPrintable(QString("rank %1 %2: relative error %3").arg(pg_->rank()).arg(dp[k].name().c_str()).arg(err)));
    }
    // The group is usable afterwards: nothing is left half-done.
    Tensor one = Tensor::ones({1});
    pg_->allreduce(one)->wait();
    QCOMPARE(one.item<float>(), float(n));
  }

  void testJoinThrowOnEarlyTermination() {
    if (pg_->size() == 1) QSKIP("needs two ranks");
    const Task t = task("mlp");
    ddp::DistributedDataParallel ddp(t.build(), pg_, {});
    Generator data(3);
    auto [x, y] = t.batch(data, 3);
    bool thrown = false;
    try {
      auto join = ddp.join(true, /*throw_on_early_termination=*/true);
      for (int i = 0; i < pg_->rank() + 1; ++i)
        t.loss(ddp.forward(x), y).backward();
      join->finish();
    } catch (const Error& e) {
      thrown = true;
      QVERIFY2(QString(e.what()).contains("throw_on_early_termination"), e.what());
    }
    QVERIFY2(thrown, "every rank must stop with an error");
    Tensor one = Tensor::ones({1});
    pg_->allreduce(one)->wait();  // and nobody is stuck in a collective
    QCOMPARE(one.item<float>(), float(pg_->size()));
  }

  void testIterationStats() {
    const Task t = task("mlp");
    ddp::DistributedDataParallel ddp(t.build(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    Generator data(6);
    for (int i = 0; i < 2; ++i) {
      auto [x, y] = t.batch(data, 8);
      t.loss(ddp.forward(x), y).backward();
    }
    const auto& s = ddp.last_iteration();
    QCOMPARE(s.iteration, int64_t{2});
    QVERIFY(s.forward_ms > 0 && s.backward_compute_ms > 0 && s.backward_comm_ms > 0);
    QVERIFY(s.overlap_ms >= 0 && s.overlap_ms <= s.backward_comm_ms + 1e-9);
    QVERIFY(s.overlap_ratio() >= 0 && s.overlap_ratio() <= 1);
    QCOMPARE(s.bucket_bytes.size(), ddp.buckets().size());
    QCOMPARE(s.ready_order.size(), ddp.parameters().size());
    size_t total = 0;
    for (size_t b : s.bucket_bytes)
      total += b;
    size_t expected = 0;
    for (auto& p : ddp.parameters())
      expected += p.nbytes();
    QCOMPARE(total, expected);

    ddp::DistributedDataParallel two(std::make_shared<TwoBranch>(), pg_, {.find_unused_parameters = true});
    sum(two.forward(Tensor::ones({2, 4}))).backward();
    QCOMPARE(two.last_iteration().unused_parameters,
             (std::vector<std::string>{"module.unused.weight", "module.unused.bias"}));
  }

  void testNoSyncAccumulatesThenSynchronises() {
    const Task t = task("mlp");
    const int n = pg_->size();
    auto reference = t.build();
    ddp::DistributedDataParallel ddp(t.build(), pg_, {});
    Generator data(5);
    auto [xa, ya] = t.batch(data, n * 2);
    auto [xb, yb] = t.batch(data, n * 2);
    {
      auto guard = ddp.no_sync();
      t.loss(ddp.forward(slice(xa, pg_->rank(), 2)), slice(ya, pg_->rank(), 2)).backward();
      // Nothing communicated: this rank's gradient is its own.
      Tensor mine = ddp.parameters()[0].grad().clone();
      std::vector<Tensor> all(n, Tensor());
      for (auto& a : all)
        a = Tensor::zeros(mine.sizes());
      pg_->allgather(all, mine)->wait();
      if (n > 1) QVERIFY(kernels::max_abs_diff(all[0], all[1]) > 0);
    }
    t.loss(ddp.forward(slice(xb, pg_->rank(), 2)), slice(yb, pg_->rank(), 2)).backward();
    // Reference: every rank's two micro-batches accumulated, averaged over ranks.
    for (int r = 0; r < n; ++r) {
      t.loss(reference->forward(slice(xa, r, 2)), slice(ya, r, 2)).backward();
      t.loss(reference->forward(slice(xb, r, 2)), slice(yb, r, 2)).backward();
    }
    const auto rp = reference->parameters(), dp = ddp.parameters();
    for (size_t i = 0; i < rp.size(); ++i) {
      Tensor expected = rp[i].grad().clone();
      kernels::scale_(expected, 1.0 / n);
      QVERIFY2(relative_error(dp[i].grad(), expected) <= 1e-5, dp[i].name().c_str());
    }
  }

  void testBuffersComeFromRankZero() {
    auto bn = std::make_shared<nn::BatchNorm1d>(3);
    bn->eval();
    bn->running_mean().fill_(pg_->rank() * 10.0);
    ddp::DistributedDataParallel ddp(bn, pg_, {});  // broadcast at construction
    QCOMPARE(bn->running_mean().at<float>({1}), 0.0f);
    bn->running_mean().fill_(pg_->rank() * 10.0 + 5.0);
    ddp.forward(Tensor::ones({2, 3}));  // and before every forward
    QCOMPARE(bn->running_mean().at<float>({2}), 5.0f);
  }

  void testMismatchedModelsAreNamed() {
    Generator g(1);
    auto m =
        std::make_shared<nn::Mlp>(nn::MlpConfig{.in_features = 4, .width = pg_->rank() == 1 ? 9 : 8, .depth = 2}, &g);
    if (pg_->size() == 1) QSKIP("needs two ranks");
    try {
      ddp::DistributedDataParallel ddp(m, pg_, {});
      QFAIL("different models must be refused");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("module.layers.0.weight"), e.what());
      QVERIFY2(QString(e.what()).contains("f32[9, 4] on rank 1") || QString(e.what()).contains("f32[8, 4] on rank 0"),
               e.what());
    }
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestDistributedDataParallel)
#include "tst_distributed_data_parallel.moc"
