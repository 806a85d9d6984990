// DistributedDataParallel under mpirun (2 and 4 ranks): N ranks with batch b give the
// gradients of one process with batch N*b, and the same parameters after 10 SGD steps;
// gradient_as_bucket_view, no_sync, unused parameters (error and option), buffers,
// mismatched models.
#include <QtTest/QtTest>

#include <numeric>
#include <set>
#include "autograd/ops.h"
#include "c10d/process_group.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp/powersgd_hook.h"
#include "mpi_test_main.h"
#include "test_helpers.h"
#include "nn/models.h"
#include "optim/optimizer.h"
#include "tensor/kernels.h"

using namespace ddpscope;
using ddpscope::testing::relative_error;

namespace {

struct Task {
  std::function<std::shared_ptr<nn::Module>()> build;
  std::function<std::pair<Tensor, Tensor>(Generator&, int64_t)> batch;  // global batch
  std::function<Tensor(const Tensor&, const Tensor&)> loss;
};

Task task(const QString& name) {
  if (name == "mlp") {
    return {[] {
              Generator g(11);
              return std::make_shared<nn::Mlp>(
                  nn::MlpConfig{.in_features = 16, .width = 64, .depth = 4, .out_features = 3}, &g);
            },
            [](Generator& g, int64_t n) {
              return std::make_pair(randn({n, 16}, DType::F32, &g), randn({n, 3}, DType::F32, &g));
            },
            [](const Tensor& out, const Tensor& y) { return mse_loss(out, y); }};
  }
  return {[] {
            Generator g(12);
            return std::make_shared<nn::CharTransformer>(
                nn::TransformerConfig{.vocab_size = 17, .context = 8, .d_model = 16, .heads = 2, .layers = 2}, &g);
          },
          [](Generator& g, int64_t n) {
            return std::make_pair(randint({n, 8}, 17, &g), randint({n, 8}, 17, &g));
          },
          [](const Tensor& out, const Tensor& y) {
            return cross_entropy(reshape(out, {-1, out.size(-1)}), reshape(y, {-1}));
          }};
}

// Rows [rank * b, (rank + 1) * b) of a global batch.
Tensor slice(const Tensor& t, int rank, int64_t b) { return t.narrow(0, rank * b, b).contiguous(); }

class TwoBranch : public nn::Module {
 public:
  TwoBranch() {
    Generator g(3);
    used_ = register_module("used", std::make_shared<nn::Linear>(4, 2, true, &g));
    unused_ = register_module("unused", std::make_shared<nn::Linear>(4, 2, true, &g));
  }
  std::string type_name() const override { return "TwoBranch"; }
  Tensor forward(const Tensor& x) override { return used_->forward(x); }

 private:
  std::shared_ptr<nn::Linear> used_, unused_;
};

// A Linear in f32 and a per-output scale stored in f16, computed in f32: DDP gets
// buckets of two dtypes.
class MixedPrecision : public nn::Module {
 public:
  MixedPrecision() {
    Generator g(9);
    fc_ = register_module("fc", std::make_shared<nn::Linear>(8, 4, true, &g));
    scale_ = register_parameter("scale", uniform({4}, 0.5, 1.5, DType::F32, &g).to(DType::F16));
  }
  std::string type_name() const override { return "MixedPrecision"; }
  Tensor forward(const Tensor& x) override { return mul(fc_->forward(x), cast(scale_, DType::F32)); }

 private:
  std::shared_ptr<nn::Linear> fc_;
  Tensor scale_;
};

// A second branch that forward uses only when asked.
class Switch : public nn::Module {
 public:
  Switch() {
    Generator g(5);
    first_ = register_module("first", std::make_shared<nn::Linear>(4, 2, true, &g));
    second_ = register_module("second", std::make_shared<nn::Linear>(4, 2, true, &g));
  }
  std::string type_name() const override { return "Switch"; }
  Tensor forward(const Tensor& x) override {
    return use_second ? add(first_->forward(x), second_->forward(x)) : first_->forward(x);
  }
  bool use_second = false;

 private:
  std::shared_ptr<nn::Linear> first_, second_;
};

// Registers a then b, but applies b first: a's gradients are ready first in backward,
// the opposite of reverse registration order.
class Crossed : public nn::Module {
 public:
  Crossed() {
    Generator g(4);
    a_ = register_module("a", std::make_shared<nn::Linear>(8, 8, true, &g));
    b_ = register_module("b", std::make_shared<nn::Linear>(8, 8, true, &g));
  }
  std::string type_name() const override { return "Crossed"; }
  Tensor forward(const Tensor& x) override { return a_->forward(tanh(b_->forward(x))); }

 private:
  std::shared_ptr<nn::Linear> a_, b_;
};

}  // namespace

class TestDdp : public QObject {
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

  void testCommHooks_data() {
    QTest::addColumn<QString>("hook");
    QTest::addColumn<double>("tolerance");
    QTest::newRow("allreduce") << "allreduce" << 1e-5;
    QTest::newRow("fp16_compress") << "fp16" << 2e-3;  // 10-bit mantissa
    QTest::newRow("bf16_compress") << "bf16" << 2e-2;  // 7-bit mantissa
  }
  void testCommHooks() {
    QFETCH(QString, hook);
    QFETCH(double, tolerance);
    const Task t = task("mlp");
    auto reference = t.build();
    ddp::DistributedDataParallel ddp(t.build(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    ddp.register_comm_hook(hook == "allreduce" ? ddp::allreduce_hook(pg_)
                           : hook == "fp16"    ? ddp::fp16_compress_hook(pg_)
                                               : ddp::bf16_compress_hook(pg_));
    Generator data(21);
    auto [x, y] = t.batch(data, 4 * pg_->size());
    t.loss(reference->forward(x), y).backward();
    t.loss(ddp.forward(slice(x, pg_->rank(), 4)), slice(y, pg_->rank(), 4)).backward();
    const auto rp = reference->parameters(), dp = ddp.parameters();
    double worst = 0;
    for (size_t i = 0; i < rp.size(); ++i) {
      const double err = relative_error(dp[i].grad(), rp[i].grad());
      worst = std::max(worst, err);
      QVERIFY2(err <= tolerance, qPrintable(QString("%1: relative error %2").arg(dp[i].name().c_str()).arg(err)));
    }
    // The compressed hooks really went through 16 bits (and the test would notice if not).
    if (hook != "allreduce") QVERIFY2(worst > 1e-6, qPrintable(QString("worst error %1").arg(worst)));
  }

  void testPowerSgdSendsLessAndStillConverges() {
    // A learnable task: y = tanh(x W) for a fixed W.
    Generator task_gen(77);
    const Tensor w = randn({16, 3}, DType::F32, &task_gen);
    auto train = [&](bool compressed) {
      Generator g(11);
      auto model =
          std::make_shared<nn::Mlp>(nn::MlpConfig{.in_features = 16, .width = 64, .depth = 3, .out_features = 3}, &g);
      ddp::DistributedDataParallel ddp(model, pg_, {});
      auto state = std::make_shared<ddp::PowerSgdState>(pg_, ddp::PowerSgdOptions{.rank = 2, .start_iteration = 3});
      if (compressed) ddp.register_comm_hook(ddp::powersgd_hook(state));
      optim::SGD opt(ddp.parameters(), {.lr = 0.1, .momentum = 0.9});
      Generator data(5 + pg_->rank());
      double first = 0, last = 0;
      for (int step = 0; step < 150; ++step) {
        Tensor x = randn({16, 16}, DType::F32, &data);
        Tensor y = kernels::unary(kernels::matmul(x, w), kernels::UnaryOp::Tanh);
        opt.zero_grad();
        Tensor loss = mse_loss(ddp.forward(x), y);
        loss.backward();
        opt.step();
        (step == 0 ? first : last) = loss.item<double>();
      }
      return std::make_tuple(first, last, state->elements_sent(), state->elements_uncompressed());
    };
    const auto [first_plain, last_plain, s0, u0] = train(false);
    const auto [first, last, sent, uncompressed] = train(true);
    qInfo("PowerSGD rank 2: loss %.4f -> %.4f (plain DDP -> %.4f), sent %lld of %lld elements", first, last, last_plain,
          static_cast<long long>(sent), static_cast<long long>(uncompressed));
    QVERIFY2(last < 0.3 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
    QVERIFY2(last < 2.0 * last_plain + 1e-3, qPrintable(QString("PowerSGD %1 vs plain %2").arg(last).arg(last_plain)));
    QVERIFY2(sent < 0.5 * uncompressed, qPrintable(QString("sent %1 of %2").arg(sent).arg(uncompressed)));
  }

  void testHookSeesEveryBucketInOrder() {
    const Task t = task("mlp");
    ddp::DistributedDataParallel ddp(t.build(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    std::vector<size_t> seen;
    bool last_flagged = false;
    auto inner = ddp::allreduce_hook(pg_);
    bool sizes_match = true;
    ddp.register_comm_hook([&](ddp::GradBucket& b) -> std::shared_ptr<c10d::Future> {
      seen.push_back(b.index);
      if (b.is_last) last_flagged = seen.size() == ddp.buckets().size();
      int64_t n = 0;
      for (auto& p : b.parameters)
        n += p.numel();
      sizes_match = sizes_match && n == b.buffer.numel();
      return inner(b);
    });
    Generator data(2);
    auto [x, y] = t.batch(data, 4);
    t.loss(ddp.forward(x), y).backward();
    std::vector<size_t> expected(ddp.buckets().size());
    std::iota(expected.begin(), expected.end(), 0);
    QCOMPARE(seen, expected);
    QVERIFY(last_flagged);
    QVERIFY(sizes_match);
    QVERIFY_THROWS_EXCEPTION(Error, ddp.register_comm_hook(inner));  // after the first backward
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

DDPSCOPE_MPI_TEST_MAIN(TestDdp)
#include "tst_ddp.moc"
