// The reducer under mpirun (2 and 4 ranks), through DistributedDataParallel: buckets in
// reverse registration order, rebuilt once from the order gradients became ready; one
// bucket per dtype; gradients computed straight into bucket slots or kept as views of
// them; unused parameters found (or named, without the option), also under no_sync; a
// static graph walked once.
#include <QtTest/QtTest>

#include "c10d/process_group.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp_test_models.h"
#include "mpi_test_main.h"
#include "test_helpers.h"
#include <set>
#include "optim/optimizer.h"
#include "tensor/kernels.h"

using namespace ddpscope;
using namespace ddpscope::testing;

class TestReducer : public QObject {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

 private slots:
  void initTestCase() { pg_ = c10d::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(120)}); }

  void testBucketsRebuiltFromReadyOrder_data() {
    QTest::addColumn<bool>("as_view");
    QTest::newRow("copy") << false;
    QTest::newRow("gradient_as_bucket_view") << true;
  }

  void testBucketsRebuiltFromReadyOrder() {
    QFETCH(bool, as_view);
    auto reference = std::make_shared<Crossed>();
    // Caps of one byte: every parameter gets a bucket of its own.
    ddp::DistributedDataParallel ddp(
        std::make_shared<Crossed>(), pg_,
        {.bucket_cap_mb = 1e-6, .first_bucket_cap_mb = 1e-6, .gradient_as_bucket_view = as_view});
    QCOMPARE(ddp.buckets().size(), size_t{4});
    QCOMPARE(ddp.buckets()[0].params, std::vector<size_t>{3});  // b.bias: reverse registration
    optim::SGD ref_opt(reference->parameters(), {.lr = 0.1});
    optim::SGD ddp_opt(ddp.parameters(), {.lr = 0.1});
    Generator data(8);
    for (int step = 0; step < 3; ++step) {
      Tensor x = randn({2 * pg_->size(), 8}, DType::F32, &data);
      ref_opt.zero_grad();
      // DDP averages the ranks' gradients: the reference loss is the sum over all rows / N.
      mul_scalar(sum(reference->forward(x)), 1.0 / pg_->size()).backward();
      ddp_opt.zero_grad();
      sum(ddp.forward(slice(x, pg_->rank(), 2))).backward();
      if (step == 0) {
        QVERIFY(!ddp.reducer().buckets_rebuilt());
        const auto& order = ddp.reducer().ready_order();
        QCOMPARE(order.size(), size_t{4});
        QVERIFY2(order[0] < 2 && order[1] < 2, "a's gradients are ready first");
      }
      for (size_t i = 0; i < 4; ++i) {
        const Tensor& expected = reference->parameters()[i].grad();
        const double err = relative_error(ddp.parameters()[i].grad(), expected);
        QVERIFY2(err <= 1e-5, qPrintable(QString("step %1 param %2 error %3").arg(step).arg(i).arg(err)));
      }
      ref_opt.step();
      ddp_opt.step();
    }
    QVERIFY(ddp.reducer().buckets_rebuilt());
    QCOMPARE(ddp.reducer().initial_bucket_specs()[0].params, std::vector<size_t>{3});
    QVERIFY2(ddp.buckets()[0].params[0] < 2, "after the rebuild a's parameters lead");
    // Every rank holds the same assignment.
    Tensor first = Tensor::full({1}, double(ddp.buckets()[0].params[0]), DType::I64);
    std::vector<Tensor> all(pg_->size(), Tensor());
    for (auto& t : all)
      t = Tensor::zeros({1}, DType::I64);
    pg_->allgather(all, first)->wait();
    for (auto& t : all)
      QCOMPARE(t.item<int64_t>(), first.item<int64_t>());
  }

  void testMixedF32AndF16Parameters() {
    auto reference = std::make_shared<MixedPrecision>();
    ddp::DistributedDataParallel ddp(std::make_shared<MixedPrecision>(), pg_, {});
    std::set<DType> dtypes;
    for (auto& b : ddp.buckets())
      dtypes.insert(b.dtype);
    QCOMPARE(dtypes, (std::set<DType>{DType::F32, DType::F16}));
    Generator data(4);
    Tensor x = randn({3 * pg_->size(), 8}, DType::F32, &data);
    mul_scalar(sum(reference->forward(x)), 1.0 / pg_->size()).backward();
    sum(ddp.forward(slice(x, pg_->rank(), 3))).backward();
    const auto rp = reference->named_parameters();
    const auto dp = ddp.parameters();
    for (size_t i = 0; i < rp.size(); ++i) {
      QCOMPARE(dp[i].grad().dtype(), rp[i].second.dtype());
      // The f16 gradient is averaged in f16: its precision bounds the error.
      const double tol = rp[i].second.dtype() == DType::F16 ? 2e-3 : 1e-5;
      const double err = relative_error(dp[i].grad(), rp[i].second.grad());
      QVERIFY2(err <= tol, qPrintable(QString("%1: relative error %2").arg(rp[i].first.c_str()).arg(err)));
    }
  }

  void testGradientAsBucketViewSharesTheBucket() {
    auto local = task("mlp").build();
    ddp::DistributedDataParallel ddp(local, pg_, {.gradient_as_bucket_view = true});
    Generator data(1);
    auto [x, y] = task("mlp").batch(data, 4);
    mse_loss(ddp.forward(x), y).backward();
    const auto params = ddp.parameters();
    // Every gradient lives in the one bucket of this small model.
    QCOMPARE(ddp.buckets().size(), size_t{1});
    for (size_t i = 1; i < params.size(); ++i)
      QVERIFY(params[i].grad().shares_storage_with(params[0].grad()));
  }

  // A Linear weight whose .grad is empty is computed straight into its bucket slot (no
  // copy); .grad still ends with its own memory, so a gradient kept from one iteration
  // is not overwritten by the next backward, and no_sync after it still accumulates.
  void testGradientsComputedIntoBuckets() {
    const Task t = task("mlp");
    const int n = pg_->size();
    auto reference = t.build();
    ddp::DistributedDataParallel ddp(t.build(), pg_, {});
    const auto params = ddp.parameters(), rp = reference->parameters();
    const size_t weights =
        static_cast<size_t>(std::count_if(params.begin(), params.end(), [](const Tensor& p) { return p.dim() == 2; }));
    Generator data(6);
    auto [xa, ya] = t.batch(data, n * 2);
    auto [xb, yb] = t.batch(data, n * 2);
    auto [xc, yc] = t.batch(data, n * 2);
    auto expect_average_of = [&](std::vector<std::pair<Tensor, Tensor>> batches) {
      for (const Tensor& p : rp)
        p.set_grad(Tensor());
      for (auto& [x, y] : batches)
        for (int r = 0; r < n; ++r)
          t.loss(reference->forward(slice(x, r, 2)), slice(y, r, 2)).backward();
      for (size_t i = 0; i < rp.size(); ++i) {
        Tensor expected = rp[i].grad().clone();
        kernels::scale_(expected, 1.0 / n);
        QVERIFY2(relative_error(params[i].grad(), expected) <= 1e-5, params[i].name().c_str());
      }
    };

    t.loss(ddp.forward(slice(xa, pg_->rank(), 2)), slice(ya, pg_->rank(), 2)).backward();
    QCOMPARE(ddp.last_iteration().gradients_copied, params.size() - weights);
    expect_average_of({{xa, ya}});
    std::vector<Tensor> kept, values;
    for (size_t i = 0; i < params.size(); ++i) {
      kept.push_back(params[i].grad());
      values.push_back(kept.back().clone());
      for (size_t j = 0; j < i; ++j)
        QVERIFY2(!kept[i].shares_storage_with(kept[j]), "each .grad has its own memory");
    }

    for (const Tensor& p : params)
      p.set_grad(Tensor());  // zero_grad(set_to_none)
    {
      auto guard = ddp.no_sync();
      t.loss(ddp.forward(slice(xb, pg_->rank(), 2)), slice(yb, pg_->rank(), 2)).backward();
    }
    t.loss(ddp.forward(slice(xc, pg_->rank(), 2)), slice(yc, pg_->rank(), 2)).backward();
    QCOMPARE(ddp.last_iteration().gradients_copied, params.size());  // all accumulated
    expect_average_of({{xb, yb}, {xc, yc}});
    for (size_t i = 0; i < kept.size(); ++i)
      QCOMPARE(kernels::max_abs_diff(kept[i], values[i]), 0.0);
  }

  void testUnusedParameterWithoutTheOptionIsNamed() {
    ddp::DistributedDataParallel ddp(std::make_shared<TwoBranch>(), pg_, {});
    Tensor x = Tensor::ones({3, 4});
    sum(ddp.forward(x)).backward();  // must return, not hang
    try {
      ddp.forward(x);
      QFAIL("the next forward must report the parameters without gradients");
    } catch (const Error& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("module.unused.weight") && msg.contains("module.unused.bias"), e.what());
      QVERIFY2(msg.contains("find_unused_parameters=true"), e.what());
    }
  }

  void testFindUnusedParameters() {
    ddp::DistributedDataParallel ddp(std::make_shared<TwoBranch>(), pg_, {.find_unused_parameters = true});
    optim::SGD opt(ddp.parameters(), {.lr = 0.1});
    for (int i = 0; i < 3; ++i) {
      opt.zero_grad();
      Tensor x = Tensor::full({3, 4}, 1.0 + pg_->rank());
      sum(ddp.forward(x)).backward();
      opt.step();
    }
    const auto params = ddp.named_parameters();
    QCOMPARE(ddp.reducer().unused_parameters().size(), size_t{2});
    for (auto& [name, p] : params) {
      if (name.find("unused") != std::string::npos) {
        QVERIFY2(!p.grad().defined(), "a globally unused parameter keeps its gradient untouched");
      } else {
        QVERIFY(p.grad().defined());
      }
    }
  }

  // Gradient accumulation with a branch: a parameter used under no_sync but not in the
  // synchronising iteration still has its accumulated gradient averaged over the ranks
  // (as PyTorch does), so every rank ends with the same .grad.
  void testNoSyncGradientOfAParameterTheLastForwardSkipped() {
    const int n = pg_->size();
    auto local = std::make_shared<Switch>();
    auto reference = std::make_shared<Switch>();
    ddp::DistributedDataParallel ddp(local, pg_, {.find_unused_parameters = true});
    Generator data(8);
    const Tensor xa = randn({n * 2, 4}, DType::F32, &data), xb = randn({n * 2, 4}, DType::F32, &data);
    {
      auto guard = ddp.no_sync();
      local->use_second = true;
      sum(ddp.forward(slice(xa, pg_->rank(), 2))).backward();
    }
    local->use_second = false;
    sum(ddp.forward(slice(xb, pg_->rank(), 2))).backward();
    for (int r = 0; r < n; ++r) {
      reference->use_second = true;
      sum(reference->forward(slice(xa, r, 2))).backward();
      reference->use_second = false;
      sum(reference->forward(slice(xb, r, 2))).backward();
    }
    const auto rp = reference->named_parameters(), dp = ddp.named_parameters();
    for (size_t i = 0; i < rp.size(); ++i) {
      Tensor expected = rp[i].second.grad().clone();
      kernels::scale_(expected, 1.0 / n);
      QVERIFY2(dp[i].second.grad().defined(), dp[i].first.c_str());
      QVERIFY2(relative_error(dp[i].second.grad(), expected) <= 1e-5, dp[i].first.c_str());
    }
  }

  void testStaticGraph() {
    // Unused parameters without find_unused_parameters: found in the first iteration,
    // then remembered; the buckets are still rebuilt.
    ddp::DistributedDataParallel ddp(std::make_shared<TwoBranch>(), pg_,
                                     {.bucket_cap_mb = 1e-6, .first_bucket_cap_mb = 1e-6, .static_graph = true});
    optim::SGD opt(ddp.parameters(), {.lr = 0.1});
    for (int i = 0; i < 4; ++i) {
      opt.zero_grad();
      sum(ddp.forward(Tensor::full({2, 4}, 1.0 + pg_->rank()))).backward();
      opt.step();
    }
    QCOMPARE(ddp.reducer().graph_walks(), int64_t{1});
    QVERIFY(ddp.reducer().buckets_rebuilt());
    for (auto& [name, p] : ddp.named_parameters()) {
      QCOMPARE(p.grad().defined(), name.find("unused") == std::string::npos);
    }
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestReducer)
#include "tst_reducer.moc"
