// SMART mode across real processes (2, 3 and 4 ranks under mpirun): a pass that leaves an
// RPC's send function without a gradient fails in FAST mode naming it, and completes in
// SMART mode. Rank 0 drives; every rank serves; each case ends with a barrier.
#include <QtTest/QtTest>

#include "dist_autograd_workers.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::testing::dist_autograd_workers;
using namespace std::chrono_literals;
using rpc::Value;
using rpc::ValueList;

class TestSmartMode : public WorldTest {
  Q_OBJECT

 private slots:

  void initTestCase() {
    join_world(g_world);
    start_worker(rank_);
  }

  void cleanupTestCase() { rpc::shutdown(true); }

  // Seed 000's "computing dependencies" example: e = b * c on worker 1 does not feed the
  // loss. FAST mode (which PyTorch leaves waiting forever) ends with an error naming the
  // send function that never got its gradient; SMART mode completes with the gradients.
  void testUnusedRpcFastErrorsSmartCompletes() {
    if (rank_ == 0) {
      for (auto mode : {dist_autograd::Mode::Fast, dist_autograd::Mode::Smart}) {
        dist_autograd::ContextGuard context;
        Tensor a = rand33(), b = rand33(), c = rand33();
        Tensor d = rpc::rpc_sync("worker1", add, a, b).tensor();
        Tensor e = rpc::rpc_sync("worker1", mul, b, c).tensor();
        Tensor loss = sum(d);
        if (mode == dist_autograd::Mode::Fast) {
          QElapsedTimer timer;
          timer.start();
          try {
            dist_autograd::backward(context.id(), {loss}, false, mode);
            QFAIL("FAST mode did not notice the unused RPC");
          } catch (const Error& err) {
            const QString what = QString::fromStdString(err.message());
            // b * c's arguments on worker 0, and its result on worker 1.
            QVERIFY2(what.contains("(FAST mode) ended with 2 send functions that never received gradients"),
                     qPrintable(what));
            QVERIFY2(what.contains("SendRpcBackward on worker0"), qPrintable(what));
            QVERIFY2(what.contains("SendRpcBackward on worker1"), qPrintable(what));
            QVERIFY2(what.contains("SMART mode"), qPrintable(what));
          }
          QVERIFY(timer.elapsed() < 20000);  // within the RPC timeout
        } else {
          dist_autograd::backward(context.id(), {loss}, false, mode);
          QCOMPARE(diff(dist_autograd::get_gradient(context.id(), a), Tensor::ones({3, 3})), 0.0);
          QCOMPARE(diff(dist_autograd::get_gradient(context.id(), b), Tensor::ones({3, 3})), 0.0);
          QVERIFY(!dist_autograd::get_gradient(context.id(), c).defined());
        }
      }
    }
    barrier();
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestSmartMode)
#include "tst_smart_mode.moc"
