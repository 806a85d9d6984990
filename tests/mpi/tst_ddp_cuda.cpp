// DistributedDataParallel with CUDA parameters over NCCL, on the
// GPU machine under mpirun: each rank uses GPU (local rank % devices). The model spans
// several buckets, so their allreduces are launched while backward still runs; after 8
// SGD steps the parameters equal those of one CPU process trained on the global batch.
// Without a usable GPU the test exits 77 (CTest SKIP) before touching MPI or NCCL.
#include <QtTest/QtTest>

#include <cstdio>

#include "autograd/ops.h"
#include "c10d/mpi_environment.h"
#include "c10d/process_group.h"
#include "ddp/distributed_data_parallel.h"
#include "nn/models.h"
#include "optim/optimizer.h"
#include "tensor/cuda_runtime_facade.h"
#include "test_helpers.h"

using namespace ddpscope;
using ddpscope::testing::relative_error;

namespace {

std::shared_ptr<nn::Mlp> build_mlp() {
  Generator g(11);
  return std::make_shared<nn::Mlp>(nn::MlpConfig{.in_features = 16, .width = 64, .depth = 4, .out_features = 3}, &g);
}

}  // namespace

class TestDdpCuda : public QObject {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

 private slots:
  void initTestCase() { pg_ = c10d::init_process_group({.backend = "nccl", .timeout = std::chrono::seconds(60)}); }

  void testEquivalenceWithOneCpuProcess_data() {
    QTest::addColumn<bool>("as_view");
    QTest::addColumn<bool>("find_unused");
    QTest::newRow("copy into buckets") << false << false;
    QTest::newRow("gradient_as_bucket_view") << true << false;
    QTest::newRow("find_unused_parameters") << false << true;
  }
  void testEquivalenceWithOneCpuProcess() {
    QFETCH(bool, as_view);
    QFETCH(bool, find_unused);
    const int n = pg_->size();
    const int64_t b = 4;
    const Device gpu = Device::cuda(0);
    auto reference = build_mlp();
    auto local = build_mlp();
    local->to(gpu);
    QCOMPARE(local->parameters().front().device(), gpu);
    ddp::DistributedDataParallel ddp(local, pg_,
                                     {.bucket_cap_mb = 0.004,
                                      .first_bucket_cap_mb = 0.001,
                                      .find_unused_parameters = find_unused,
                                      .gradient_as_bucket_view = as_view});
    QVERIFY2(ddp.buckets().size() >= 3, qPrintable(QString("only %1 buckets").arg(ddp.buckets().size())));
    const optim::SgdOptions sgd{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3};
    optim::SGD ref_opt(reference->parameters(), sgd);
    optim::SGD ddp_opt(ddp.parameters(), sgd);
    Generator data(99);  // the same global batches on every rank
    for (int step = 0; step < 8; ++step) {
      Tensor x = randn({n * b, 16}, DType::F32, &data), y = randn({n * b, 3}, DType::F32, &data);
      ref_opt.zero_grad();
      mse_loss(reference->forward(x), y).backward();
      ddp_opt.zero_grad();
      Tensor lx = x.narrow(0, pg_->rank() * b, b).contiguous().to(gpu);
      Tensor ly = y.narrow(0, pg_->rank() * b, b).contiguous().to(gpu);
      mse_loss(ddp.forward(lx), ly).backward();
      const auto dp = ddp.parameters();
      for (const Tensor& p : dp)
        QCOMPARE(p.grad().device(), gpu);
      ref_opt.step();
      ddp_opt.step();
    }
    const auto rp = reference->parameters(), dp = ddp.parameters();
    for (size_t i = 0; i < rp.size(); ++i) {
      const double err = relative_error(dp[i], rp[i]);
      QVERIFY2(err <= 1e-4,
               qPrintable(QString("parameter %1 after 8 steps: relative error %2").arg(dp[i].name().c_str()).arg(err)));
    }
  }

  void cleanupTestCase() { pg_.reset(); }
};

int main(int argc, char** argv) {
  if (!cuda::available()) {
    std::printf("SKIP: no usable CUDA device for DDP over NCCL\n");
    return 77;
  }
  c10d::MpiEnvironment::ensure_initialized();
  QCoreApplication app(argc, argv);
  QStringList args = app.arguments();
  if (c10d::MpiEnvironment::world_rank() != 0) args << "-silent";
  TestDdpCuda test;
  return QTest::qExec(&test, args);
}

#include "tst_ddp_cuda.moc"
