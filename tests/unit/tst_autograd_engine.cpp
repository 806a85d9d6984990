// The autograd engine: dependency counting, hooks and their order, queued callbacks,
// retain_graph, no_grad, restricted backward, graph snapshots, in-place detection,
// work injected from another thread, and the errors users hit.
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

namespace {
Tensor leaf(std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<double>(v, {n}).set_requires_grad(true);
}
}  // namespace

class TestAutogradEngine : public QObject {
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

  void testGradientsAccumulateAcrossBackwards() {
    Tensor x = leaf({1, 2});
    sum(mul_scalar(x, 2)).backward();
    sum(mul_scalar(x, 3)).backward();
    QCOMPARE(x.grad().to_vector<double>(), (std::vector<double>{5, 5}));
  }

  // A Linear's weight gradient goes straight into an offered destination while .grad is
  // empty, and only once per backward; the values equal the plain computation.
  void testGradientDestinations() {
    Generator gen(7);
    const Tensor x = randn({5, 3}, DType::F32, &gen), x2 = randn({5, 3}, DType::F32, &gen);
    const Tensor w = randn({4, 3}, DType::F32, &gen).set_requires_grad(true);
    auto grad_of = [&](int uses) {  // uses 2: w's two gradients differ
      Tensor out = linear(x, w);
      if (uses == 2) out = add(out, linear(x2, w));
      sum(mul(out, out)).backward();
      return w.grad();
    };
    const Tensor once = grad_of(1).clone();
    w.set_grad(Tensor());
    const Tensor twice = grad_of(2).clone();
    w.set_grad(Tensor());

    const Tensor slot = Tensor::zeros({4, 3}, DType::F32);
    autograd::offer_gradient_destination(w, slot);
    const Tensor g1 = grad_of(1);
    QVERIFY2(g1.is_same_view_as(slot), "an empty .grad is computed into the destination");
    DDPSCOPE_COMPARE_TENSORS(g1, once, 1e-6, 0);
    // Taken once: with .grad set, the next backward accumulates into .grad as usual.
    const Tensor accumulated = grad_of(1);
    DDPSCOPE_COMPARE_TENSORS(accumulated, kernels::affine(once, 2, 0), 1e-5, 0);

    // A weight used twice: one of its two gradients may go to the destination, and
    // their sum is still right.
    w.set_grad(Tensor());
    autograd::offer_gradient_destination(w, slot);
    DDPSCOPE_COMPARE_TENSORS(grad_of(2), twice, 1e-5, 0);

    // grad() returns gradients to the caller: never a view of the destination.
    w.set_grad(Tensor());
    const Tensor fresh_slot = Tensor::zeros({4, 3}, DType::F32);
    autograd::offer_gradient_destination(w, fresh_slot);
    const Tensor out = linear(x, w);
    const Tensor g = autograd::grad({sum(mul(out, out))}, {w})[0];
    QVERIFY(!g.shares_storage_with(fresh_slot));
    DDPSCOPE_COMPARE_TENSORS(g, once, 1e-6, 0);
    QCOMPARE(kernels::max_abs_diff(fresh_slot, Tensor::zeros({4, 3}, DType::F32)), 0.0);
    QVERIFY(!w.grad().defined());
    autograd::offer_gradient_destination(w, Tensor());

    // A destination of another shape is not used; a withdrawn one neither.
    w.set_grad(Tensor());
    autograd::offer_gradient_destination(w, Tensor::zeros({3, 4}, DType::F32));
    QVERIFY(!grad_of(1).shares_storage_with(slot));
    w.set_grad(Tensor());
    autograd::offer_gradient_destination(w, slot);
    autograd::offer_gradient_destination(w, Tensor());
    QVERIFY(!grad_of(1).shares_storage_with(slot));
  }

  void testDependencyCountsInSnapshot() {
    Tensor x = leaf({1, 2});
    Tensor h = mul(x, x);
    Tensor y = sum(add(h, h));
    const autograd::GraphSnapshot g = autograd::snapshot_graph({y});
    // Sum <- Add <- Mul (twice) <- AccumulateGrad (twice: x used twice by mul).
    QCOMPARE(int(g.nodes.size()), 4);
    std::map<std::string, int> deps;
    for (auto& n : g.nodes)
      deps[n.name] = n.dependencies;
    QCOMPARE(deps["SumBackward"], 0);
    QCOMPARE(deps["AddBackward"], 1);
    QCOMPARE(deps["MulBackward"], 2);
    QCOMPARE(deps["AccumulateGrad"], 2);
    QCOMPARE(int(g.edges.size()), 5);
    auto acc = std::find_if(g.nodes.begin(), g.nodes.end(),
                            [](auto& n) { return n.kind == autograd::NodeKind::AccumulateGrad; });
    QVERIFY(acc != g.nodes.end());
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

  void testInPlaceChangeOfSavedTensorIsReported() {
    Tensor x = leaf({1, 2});
    Tensor w = Tensor::from_vector<double>({3, 4}, {2});
    Tensor y = sum(mul(x, w));
    w.fill_(0);  // mul saved w for the gradient of x
    try {
      y.backward();
      QFAIL("backward must detect the in-place change");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("modified in place"), e.what());
    }
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

QTEST_GUILESS_MAIN(TestAutogradEngine)
#include "tst_autograd_engine.moc"
