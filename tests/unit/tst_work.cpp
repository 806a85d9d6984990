// Future and Work without any backend: completion, chaining, error propagation, and
// the timeout error of Work::wait.
#include <QtTest/QtTest>

#include <thread>

#include "c10d/work.h"
#include "tensor/kernels.h"

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

QTEST_GUILESS_MAIN(TestWork)
#include "tst_work.moc"
