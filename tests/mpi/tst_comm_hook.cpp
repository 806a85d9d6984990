// Communication hooks under mpirun (2 and 4 ranks): allreduce, fp16 and bf16 compression
// give the one-process gradients within their precision; a hook sees every bucket once, in
// order, with the last flagged, and cannot be registered after the first backward.
#include <QtTest/QtTest>

#include "c10d/process_group.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp_test_models.h"
#include "mpi_test_main.h"
#include "test_helpers.h"
#include <numeric>

using namespace ddpscope;
using namespace ddpscope::testing;

class TestCommHook : public QObject {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

 private slots:
  void initTestCase() { pg_ = c10d::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(120)}); }

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
};

DDPSCOPE_MPI_TEST_MAIN(TestCommHook)
#include "tst_comm_hook.moc"
