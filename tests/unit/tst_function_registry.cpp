// The functions a worker runs for others: the engine's ops are built in and named by
// their C++ function, each with how large a call the receive thread may run, a registered name replaces an earlier one,
// an unknown name is not found, async functions are kept apart, and what cannot be registered is refused.
#include <QtTest/QtTest>

#include "autograd/ops.h"
#include "rpc/function_registry.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::rpc;

class TestFunctionRegistry : public QObject {
  Q_OBJECT

 private slots:
  void testBuiltInOpsAreNamedByTheirFunction() {
    QCOMPARE(FunctionRef(add).name(), std::string("add"));
    QCOMPARE(FunctionRef(matmul).name(), std::string("matmul"));
    const auto f = find_function("add");
    QVERIFY(f && f->fn && f->options.quick);
    // What the agent runs on its receive thread: echo at any size, matmul only when small.
    QCOMPARE(find_function("echo")->options.inline_bytes, SIZE_MAX);
    QVERIFY(find_function("matmul")->options.inline_bytes < f->options.inline_bytes);
    const Value sum = (*f)({Value(Tensor::full({2}, 1.0)), Value(Tensor::full({2}, 2.0))});
    QCOMPARE(sum.tensor().to_vector<float>(), (std::vector<float>{3, 3}));
    // A function of the same shape that is not built in must be registered by name.
    Tensor (*not_built_in)(const Tensor&, const Tensor&) = [](const Tensor& a, const Tensor&) { return a; };
    QVERIFY_THROWS_EXCEPTION(Error, FunctionRef{not_built_in});
  }

  void testARegisteredNameReplacesTheEarlierOne() {
    register_function("answer", [](const ValueList&) { return Value(int64_t{41}); });
    register_function("answer", [](const ValueList&) { return Value(int64_t{42}); });
    const auto f = find_function("answer");
    QVERIFY(f);
    QCOMPARE((*f)({}).to_int(), int64_t{42});
    QVERIFY(!f->options.quick);  // not quick unless said
    QVERIFY(!find_function("no such function"));
  }

  void testAsyncFunctionsAreKeptApart() {
    register_async_function("later", [](const ValueList&) { return std::shared_ptr<ValueFuture>(); });
    const auto f = find_function("later");
    QVERIFY(f && f->async_fn && !f->fn);
  }

  void testWhatCannotBeRegisteredIsRefused() {
    QVERIFY_THROWS_EXCEPTION(Error, register_function("", [](const ValueList&) { return Value(); }));
    QVERIFY_THROWS_EXCEPTION(Error, register_function("empty", RemoteFunction()));
    QVERIFY_THROWS_EXCEPTION(Error, register_async_function("empty", AsyncRemoteFunction()));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFunctionRegistry)
#include "tst_function_registry.moc"
