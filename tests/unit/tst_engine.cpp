// The autograd engine: dependency counting, hooks and their order, queued callbacks,
// retain_graph, no_grad, restricted backward, several roots, work injected from another
// thread, and the errors users hit.
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

using namespace ddpscope;

using ddpscope::testing::leaf;

class TestEngine : public QObject {
  Q_OBJECT
 private slots:

  void testDiamondSumsBothPaths() {
    // y = x*x + 3x uses x along two paths; dy/dx = 2x + 3 needs both contributions
    // to arrive before AccumulateGrad runs once.
    Tensor x = leaf({1, 2});
    int accumulations = 0;
    autograd::register_post_accumulate_grad_hook(x, [&](const Tensor&) { ++accumulations; });
    sum(add(mul(x, x), mul_scalar(x, 3))).backward();
    QCOMPARE(x.grad().to_vector<double>(), (std::vector<double>{5, 7}));
    QCOMPARE(accumulations, 1);
  }

  void testHookOrderAndReplacement() {
    Tensor x = leaf({1, 1});
    Tensor h = mul_scalar(x, 2);
    std::vector<std::string> order;
    h.register_hook([&](const Tensor& g) -> std::optional<Tensor> {
      order.push_back("h1");
      return kernels::affine(g, 10, 0);  // replaces the gradient flowing on
    });
    h.register_hook([&](const Tensor& g) -> std::optional<Tensor> {
      order.push_back("h2 sees " + std::to_string(int(g.to_vector<double>()[0])));
      return std::nullopt;
    });
    x.register_hook([&](const Tensor&) -> std::optional<Tensor> {
      order.push_back("leaf");
      return std::nullopt;
    });
    autograd::register_post_accumulate_grad_hook(x, [&](const Tensor& v) {
      order.push_back("post-accumulate grad=" + std::to_string(int(v.grad().to_vector<double>()[0])));
    });
    sum(h).backward();
    QCOMPARE(order, (std::vector<std::string>{"h1", "h2 sees 10", "leaf", "post-accumulate grad=20"}));
  }

  void testQueuedCallbacksRunAfterBackward() {
    Tensor a = leaf({1}), b = leaf({2});
    std::vector<std::string> events;
    bool queued = false;
    autograd::register_post_accumulate_grad_hook(a, [&](const Tensor&) {
      events.push_back("a ready");
      if (!queued) {
        queued = true;
        autograd::queue_callback([&] {
          events.push_back("finalize");
          autograd::queue_callback([&] { events.push_back("queued by callback"); });
        });
      }
    });
    autograd::register_post_accumulate_grad_hook(b, [&](const Tensor&) { events.push_back("b ready"); });
    sum(add(mul_scalar(a, 2), b)).backward();
    QCOMPARE(events.size(), size_t{4});
    QCOMPARE(events[2], std::string("finalize"));
    QCOMPARE(events[3], std::string("queued by callback"));
    QVERIFY_THROWS_EXCEPTION(Error, autograd::queue_callback([] {}));
  }

  void testRetainGraph() {
    Tensor x = leaf({3});
    Tensor y = sum(mul(x, x));
    y.backward({}, /*retain_graph=*/true);
    y.backward();
    QCOMPARE(x.grad().to_vector<double>(), (std::vector<double>{12}));
    try {
      y.backward();
      QFAIL("a third backward through a freed graph must fail");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("retain_graph"), e.what());
    }
  }

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

  void testGradRestrictedToInputs() {
    Tensor x = leaf({1, 2}), w = leaf({3, 4});
    Tensor y = sum(mul(x, w));
    std::vector<Tensor> g = autograd::grad({y}, {x}, {}, true);
    QCOMPARE(g[0].to_vector<double>(), (std::vector<double>{3, 4}));
    QVERIFY(!x.grad().defined());  // grad() leaves .grad alone
    QVERIFY(!w.grad().defined());
    autograd::backward({y}, {}, false, {w});  // only w accumulates
    QCOMPARE(w.grad().to_vector<double>(), (std::vector<double>{1, 2}));
    QVERIFY(!x.grad().defined());
    Tensor unused = leaf({5});
    QVERIFY_THROWS_EXCEPTION(Error, autograd::grad({sum(mul(x, x))}, {unused}));
    auto allowed = autograd::grad({sum(mul(x, x))}, {x, unused}, {}, false, true);
    QVERIFY(!allowed[1].defined());
  }

  void testRetainGradOnIntermediate() {
    Tensor x = leaf({1, 2});
    Tensor h = mul_scalar(x, 3);
    h.retain_grad();
    sum(mul(h, h)).backward();
    QCOMPARE(h.grad().to_vector<double>(), (std::vector<double>{6, 12}));
  }

  void testLaterNodesRunFirst() {
    // Two independent branches: the branch created last in the forward runs first,
    // which is what makes gradients of the last layers ready first (DDP's order).
    Tensor a = leaf({1}), b = leaf({1});
    std::vector<std::string> order;
    autograd::register_post_accumulate_grad_hook(a, [&](const Tensor&) { order.push_back("a"); });
    autograd::register_post_accumulate_grad_hook(b, [&](const Tensor&) { order.push_back("b"); });
    Tensor ya = mul_scalar(a, 2);
    Tensor yb = mul_scalar(b, 2);
    sum(add(ya, yb)).backward();
    QCOMPARE(order, (std::vector<std::string>{"b", "a"}));
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

QTEST_GUILESS_MAIN(TestEngine)
#include "tst_engine.moc"
