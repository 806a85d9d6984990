// A graph task, one backward pass: nodes created later run first, callbacks queued during
// the pass run after it (also those they queue), retain_graph keeps the graph for one more
// pass, and a pass restricted to some inputs touches only them.
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

class TestGraphTask : public QObject {
  Q_OBJECT
 private slots:

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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestGraphTask)
#include "tst_graph_task.moc"
