// PowerSGD under mpirun (2 and 4 ranks): rank-2 compression sends under half the
// elements and still trains as plain DDP does.
#include <QtTest/QtTest>

#include "c10d/process_group.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp_test_models.h"
#include "mpi_test_main.h"
#include "test_helpers.h"
#include "ddp/powersgd_hook.h"
#include "optim/optimizer.h"
#include "tensor/kernels.h"

using namespace ddpscope;
using namespace ddpscope::testing;

class TestPowerSgdHook : public QObject {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

 private slots:
  void initTestCase() { pg_ = c10d::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(120)}); }

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
};

DDPSCOPE_MPI_TEST_MAIN(TestPowerSgdHook)
#include "tst_powersgd_hook.moc"
