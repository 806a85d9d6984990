// Future and Work without any backend: completion, chaining, error propagation, waiting
// with a spin first, and
// the timeout error of Work::wait.
#include <QtTest/QtTest>

#include <thread>

#include "c10d/work.h"
#include "tensor/kernels.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::c10d;

class TestWork : public QObject {
  Q_OBJECT
 private slots:
  void testThenChainsOnCompletion() {
    auto f = std::make_shared<Future>();
    auto doubled = f->then([](Future& done) {
      Tensor t = done.value()[0].clone();
      kernels::scale_(t, 2.0);
      return std::vector<Tensor>{t};
    });
    QVERIFY(!doubled->completed());
    std::thread producer([f] { f->mark_completed({Tensor::full({2}, 3.0)}); });
    QCOMPARE(doubled->wait()[0].at<float>({1}), 6.0f);
    producer.join();
    // Chaining on a completed future runs at once.
    QVERIFY(f->then([](Future& d) { return d.value(); })->completed());
  }

  void testErrorsPropagateThroughThen() {
    auto f = std::make_shared<Future>();
    bool ran = false;
    auto next = f->then([&](Future& d) {
      ran = true;
      return d.value();
    });
    f->set_error(std::make_exception_ptr(CommError("peer gone", __FILE__, __LINE__)));
    QVERIFY_THROWS_EXCEPTION(CommError, next->wait());
    QVERIFY(!ran);
    // A callback that throws fails its own future.
    auto g = std::make_shared<Future>();
    auto bad = g->then([](Future&) -> std::vector<Tensor> { throw DDPSCOPE_ERROR("hook failed"); });
    g->mark_completed({});
    QVERIFY_THROWS_EXCEPTION(Error, bad->wait());
  }

  // wait_spinning: a value or error that comes while it watches, or after it gave up and
  // sleeps, is returned (rethrown) the same as by wait().
  void testWaitSpinningTakesTheOutcomeEitherWay() {
    for (int delay_us : {0, 20, 5000}) {  // before, while it spins, after it sleeps
      auto f = std::make_shared<c10d::BasicFuture<int>>();
      std::thread t([f, delay_us] {
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
        f->mark_completed(delay_us + 1);
      });
      QCOMPARE(f->wait_spinning(std::chrono::microseconds(50)), delay_us + 1);
      t.join();
    }
    auto g = std::make_shared<c10d::BasicFuture<int>>();
    std::thread t([g] { g->set_error(std::make_exception_ptr(DDPSCOPE_ERROR("no answer"))); });
    QVERIFY_THROWS_EXCEPTION(Error, g->wait_spinning(std::chrono::microseconds(50)));
    t.join();
  }

  void testWorkWaitTimesOutWithANamedOp() {
    Work w(OpType::Allreduce, 7, "allreduce #7 f32[4] (sum) on group 'world'", {}, std::chrono::minutes(1), 3);
    try {
      w.wait(std::chrono::milliseconds(50));
      QFAIL("wait must time out");
    } catch (const CommError& e) {
      QVERIFY2(QString(e.what()).contains("rank 3 waited 50 ms for allreduce #7 f32[4] (sum)"), e.what());
    }
    w.finish();
    w.wait();  // completed now: returns at once
    QVERIFY(w.is_success());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestWork)
#include "tst_work.moc"
