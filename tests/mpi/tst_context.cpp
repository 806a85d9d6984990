// Distributed-autograd contexts across real processes (2, 3 and 4 ranks under mpirun):
// concurrent contexts stay separate, misuse of contexts and roots is named, and a released
// context is gone on every worker. Rank 0 drives; every rank serves; each case ends with
// a barrier.
#include <QtTest/QtTest>

#include "dist_autograd_workers.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::testing::dist_autograd_workers;
using namespace std::chrono_literals;
using rpc::Value;
using rpc::ValueList;

class TestContext : public WorldTest {
  Q_OBJECT

 private slots:

  void initTestCase() {
    join_world(g_world);
    start_worker(rank_);
  }

  void cleanupTestCase() { rpc::shutdown(true); }

  // 20 contexts at once on 20 threads, each with its own tensors.
  void testConcurrentContextsStaySeparate() {
    if (rank_ == 0) {
      std::atomic<int> good{0};
      std::vector<std::thread> threads;
      for (int i = 0; i < 20; ++i) {
        threads.emplace_back([&, i] {
          dist_autograd::ContextGuard context;
          Tensor t = Tensor::full({2, 2}, 1.0 + i).set_requires_grad();
          Tensor loss = sum(rpc::rpc_sync(1 + i % (size_ - 1), "dat.chain", {Value(int64_t{0}), Value(t)}).tensor());
          dist_autograd::backward(context.id(), {loss});
          // d/dt sum(t * t) = 2t
          if (diff(dist_autograd::get_gradient(context.id(), t), Tensor::full({2, 2}, 2.0 * (1 + i))) == 0) ++good;
        });
      }
      for (auto& th : threads)
        th.join();
      QCOMPARE(good.load(), 20);
    }
    barrier();
  }

  void testContextAndRootErrors() {
    if (rank_ == 0) {
      dist_autograd::ContextGuard context;
      try {
        dist_autograd::ContextGuard second;
        QFAIL("a second context opened on the same thread");
      } catch (const Error& e) {
        QVERIFY2(QString::fromStdString(e.message()).contains(QString("(id %1) is already open").arg(context.id())),
                 e.what());
      }
      try {
        dist_autograd::get_gradients(424242);
        QFAIL("an unknown context was found");
      } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.message()), QString("no distributed autograd context with id 424242"));
      }
      Tensor t = rand33();
      Tensor not_scalar = rpc::rpc_sync("worker1", add, t, t).tensor();
      auto message_of = [&](const std::vector<Tensor>& roots) {
        try {
          dist_autograd::backward(context.id(), roots);
        } catch (const Error& e) {
          return QString::fromStdString(e.message());
        }
        return QString();
      };
      QVERIFY(message_of({not_scalar}).contains("roots must be scalars"));
      QVERIFY(message_of({sum(randn({2}))}).contains("does not require grad"));
      QVERIFY(message_of({Tensor::ones({1}).set_requires_grad()}).contains("has no grad_fn"));
      // A local backward through a recv function says what to do instead.
      try {
        autograd::backward({sum(not_scalar)});
        QFAIL("a local backward crossed workers");
      } catch (const Error& e) {
        QVERIFY2(QString::fromStdString(e.message()).contains("run dist_autograd::backward"), e.what());
      }
    }
    barrier();
  }

  // Releasing a context frees it on every worker it reached, transitively.
  void testReleaseReachesEveryWorker() {
    barrier();
    if (rank_ == 0) {
      {
        dist_autograd::ContextGuard context;
        Tensor t = rand33();
        Tensor loss = sum(rpc::rpc_sync("worker1", "dat.chain", {Value(int64_t{2 * size_}), Value(t)}).tensor());
        dist_autograd::backward(context.id(), {loss});
        for (int w = 1; w < size_; ++w)
          QVERIFY(rpc::rpc_sync(w, "dat.contexts").to_int() >= 1);
      }
      for (int w = 0; w < size_; ++w) {
        QVERIFY2(eventually([&] { return rpc::rpc_sync(w, "dat.contexts").to_int() == 0; }),
                 qPrintable(QString("worker %1 still holds a context").arg(w)));
      }
    }
    barrier();
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestContext)
#include "tst_context.moc"
