// The autograd engine: no_grad, errors users hit when calling backward, several roots at
// once, work delivered from another thread, and an error in a node reaching the caller.
#include <QtTest/QtTest>

#include <thread>

#include "autograd/accumulate_grad.h"
#include "autograd/autograd_meta.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/graph_snapshot.h"
#include "autograd/ops.h"
#include "tensor/kernels.h"
#include "test_helpers.h"
#include "test_registry.h"

using namespace ddpscope;

using ddpscope::testing::leaf;

class TestEngine : public QObject {
  Q_OBJECT
 private slots:

  void testNoGrad() {
    Tensor x = leaf({1, 2});
    Tensor y;
    {
      autograd::NoGradGuard guard;
      y = mul(x, x);
    }
    QVERIFY(!y.requires_grad());
    QVERIFY(y.grad_fn() == nullptr);
    QVERIFY(mul(x, x).requires_grad());
  }

  void testBackwardErrors_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("expected");
    QTest::newRow("no grad") << 0 << "does not require grad";
    QTest::newRow("non-scalar") << 1 << "only for a scalar";
    QTest::newRow("wrong gradient shape") << 2 << "does not match";
    QTest::newRow("integer requires grad") << 3 << "integer dtype";
  }

  void testBackwardErrors() {
    QFETCH(int, which);
    QFETCH(QString, expected);
    try {
      switch (which) {
        case 0: Tensor::ones({2}).backward(); break;
        case 1: mul_scalar(leaf({1, 2}), 2).backward(); break;
        case 2: mul_scalar(leaf({1, 2}), 2).backward(Tensor::ones({3}, DType::F64)); break;
        case 3: Tensor::zeros({2}, DType::I64).set_requires_grad(true); break;
      }
      QFAIL("no error raised");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains(expected), e.what());
    }
  }

  void testSeveralRoots() {
    Tensor x = leaf({1, 2});
    Tensor a = sum(mul_scalar(x, 2)), b = sum(mul(x, x));
    autograd::backward({a, b});
    QCOMPARE(x.grad().to_vector<double>(), (std::vector<double>{4, 6}));
  }

  void testDeliveryFromAnotherThread() {
    // A GraphTask held open by an external party receives a gradient from another
    // thread (as distributed autograd's recv will) and finishes only afterwards.
    Tensor x = leaf({1, 2});
    auto acc = autograd::grad_accumulator(x);
    auto task = std::make_shared<autograd::GraphTask>(false);
    autograd::GraphRoot root({}, {});
    task->compute_dependencies(&root);
    task->hold();
    std::thread sender([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      autograd::InputBuffer buffer(1);
      buffer.add(0, Tensor::from_vector<double>({7, 8}, {2}));
      task->push_ready(acc, std::move(buffer));
      task->release();
    });
    task->run();
    sender.join();
    QCOMPARE(x.grad().to_vector<double>(), (std::vector<double>{7, 8}));
  }

  void testErrorInNodePropagates() {
    Tensor x = leaf({1, 2});
    Tensor y = mul_scalar(x, 2);
    y.register_hook([](const Tensor&) -> std::optional<Tensor> { throw DDPSCOPE_ERROR("hook failed on purpose"); });
    QVERIFY_THROWS_EXCEPTION(Error, sum(y).backward());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestEngine)
#include "tst_engine.moc"
