// RPC across real processes (2, 3 and 4 ranks under mpirun): every API call, nested
// chains, remote() and to_here(), errors, timeouts, foreign and malformed messages, and a
// graceful shutdown with calls in flight (the RRef protocol: tst_rref_context). Rank 0 drives most cases; every rank
// serves, and each case ends with a barrier so no rank moves on while another still needs it.
#include <QtTest/QtTest>

#include "rpc_workers.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::testing::rpc_workers;
using namespace std::chrono_literals;

class TestRpc : public WorldTest {
  Q_OBJECT

 private slots:

  void initTestCase() {
    join_world(g_world);
    start_worker();
  }

  void testWorkerInfo() {
    QCOMPARE(rpc::get_worker_info().id, rank_);
    QCOMPARE(rpc::get_worker_info().name, QString("worker%1").arg(rank_).toStdString());
    QCOMPARE(rpc::get_worker_info("worker1").id, 1);
    QCOMPARE(rpc::agent().workers().size(), size_t(size_));
    // Loopback only: a single-host job never listens on every interface (on the transport
    // DDPSCOPE_RPC_TRANSPORT chose).
    QVERIFY2(rpc::endpoint_host_port(rpc::agent().endpoint()).rfind("127.0.0.1:", 0) == 0,
             rpc::agent().endpoint().c_str());
    try {
      rpc::get_worker_info("nobody");
      QFAIL("an unknown worker name was accepted");
    } catch (const rpc::RpcError& e) {
      QVERIFY2(QString(e.what()).contains("unknown worker 'nobody'; the workers are worker0, worker1"), e.what());
    }
    barrier();
  }

  // Seed 000's example, as written: rpc_sync("worker1", add, t1, t2).
  void testSeedExampleAdd() {
    if (rank_ == 0) {
      Tensor t1 = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
      Tensor t2 = Tensor::full({3, 3}, 0.5);
      Tensor t3 = rpc::rpc_sync("worker1", add, t1, t2).tensor();
      QCOMPARE(t3.sizes(), (Shape{3, 3}));
      QCOMPARE(t3.to_vector<float>(), add(t1, t2).to_vector<float>());
      Tensor t4 = rpc::rpc_sync("worker1", "mul", {t1, t2}).tensor();
      QCOMPARE(t4.to_vector<float>(), mul(t1, t2).to_vector<float>());
    }
    barrier();
  }

  // Every dtype, views sent compact, big tensors, scalars, strings and nested lists.
  void testValuesRoundTrip() {
    if (rank_ == 0) {
      const int to = size_ - 1;
      for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64}) {
        Tensor t = Tensor::arange(24, DType::I64).to(d).view({2, 3, 4});
        Tensor back = rpc::rpc_sync(to, "echo", {t}).tensor();
        QCOMPARE(back.dtype(), d);
        QCOMPARE(back.sizes(), t.sizes());
        QCOMPARE(back.to(DType::F64).to_vector<double>(), t.to(DType::F64).to_vector<double>());
      }
      Tensor base = Tensor::arange(12, DType::I64).to(DType::F32).view({3, 4});
      Tensor view = base.transpose(0, 1);  // not contiguous: sent as its 4x3 elements
      Tensor back = rpc::rpc_sync(to, "echo", {view}).tensor();
      QCOMPARE(back.sizes(), (Shape{4, 3}));
      QCOMPARE(back.to_vector<float>(), view.contiguous().to_vector<float>());
      Tensor slice = base.narrow(0, 1, 2);  // contiguous slice of a bigger storage
      QCOMPARE(rpc::rpc_sync(to, "echo", {slice}).tensor().to_vector<float>(), slice.to_vector<float>());
      Tensor big = Tensor::full({1 << 18}, 3.0);  // 1 MiB: sent without a copy
      Tensor big_back = rpc::rpc_sync(to, "echo", {big}).tensor();
      QCOMPARE(big_back.numel(), big.numel());
      QCOMPARE(big_back.to_vector<float>()[12345], 3.0f);
      QVERIFY(!big_back.shares_storage_with(big));
      rpc::Value nested = rpc::ValueList{
          rpc::Value(int64_t{7}), rpc::Value(2.5), rpc::Value("text"),
          rpc::Value(true),       rpc::Value(),    rpc::Value(rpc::ValueList{rpc::Value(Tensor::ones({2}))})};
      rpc::Value r = rpc::rpc_sync(to, "echo", {nested});
      QCOMPARE(r.list().size(), size_t(6));
      QCOMPARE(r.list()[0].to_int(), int64_t{7});
      QCOMPARE(r.list()[1].to_double(), 2.5);
      QCOMPARE(r.list()[2].str(), std::string("text"));
      QCOMPARE(r.list()[3].to_bool(), true);
      QVERIFY(r.list()[4].is_none());
      QCOMPARE(r.list()[5].list()[0].tensor().to_vector<float>(), (std::vector<float>{1, 1}));
      Tensor g = Tensor::ones({2}).set_requires_grad(true);
      QVERIFY(rpc::rpc_sync(to, "echo", {g}).tensor().requires_grad());
    }
    barrier();
  }

  void testAsyncThenRunsOffTheReceiveThread() {
    if (rank_ == 0) {
      auto fut = rpc::rpc_async("worker1", "add", {Tensor::ones({2}), Tensor::ones({2})});
      // The callback makes a blocking RPC of its own: on the receive thread it would
      // wait for a reply that thread must read, forever.
      auto chained = fut->then([](rpc::ValueFuture& f) {
        return rpc::rpc_sync("worker1", "mul", {f.value().tensor(), Tensor::full({2}, 3.0)});
      });
      QCOMPARE(chained->wait().tensor().to_vector<float>(), (std::vector<float>{6, 6}));
      // Many at once.
      std::vector<std::shared_ptr<rpc::ValueFuture>> futs;
      for (int i = 0; i < 200; ++i)
        futs.push_back(rpc::rpc_async(1 + i % (size_ - 1), "echo", {rpc::Value(int64_t{i})}));
      for (int i = 0; i < 200; ++i)
        QCOMPARE(futs[i]->wait().to_int(), int64_t{i});
    }
    barrier();
  }

  // A chain through every worker three times, each hop a blocking rpc_sync made inside
  // a remote function, with one pool thread configured per worker.
  void testNestedChainAcrossWorkers() {
    if (rank_ == 0) {
      const int64_t hops = 3 * size_;
      Tensor r = rpc::rpc_sync("worker1", "test.chain", {rpc::Value(hops), rpc::Value(Tensor::zeros({2}))}).tensor();
      QCOMPARE(r.to_vector<float>(), (std::vector<float>(2, static_cast<float>(hops + 1))));
    }
    barrier();
  }

  void testRemoteAndToHere() {
    if (rank_ == 0) {
      Tensor t1 = Tensor::full({3, 3}, 2.0), t2 = Tensor::full({3, 3}, 5.0);
      rpc::RRef r = rpc::remote("worker1", add, t1, t2);
      QCOMPARE(r.owner(), 1);
      QCOMPARE(r.owner_name(), std::string("worker1"));
      QVERIFY(!r.is_owner());
      QCOMPARE(r.to_here().tensor().to_vector<float>(), std::vector<float>(9, 7.0f));
      try {
        r.local_value();
        QFAIL("local_value on a UserRRef succeeded");
      } catch (const rpc::RpcError& e) {
        QVERIFY2(QString(e.what()).contains("use to_here()"), e.what());
      }
      // to_here waits for a value the owner has not produced yet.
      const auto start = std::chrono::steady_clock::now();
      rpc::RRef slow = rpc::remote("worker1", "test.slow_value", {rpc::Value(int64_t{300}), rpc::Value("late")});
      QCOMPARE(slow.to_here().str(), std::string("late"));
      QVERIFY(std::chrono::steady_clock::now() - start >= 250ms);
      // user -> owner: the owner sees its own value.
      QCOMPARE(rpc::rpc_sync("worker1", "test.is_owner", {r}).to_bool(), true);
      QCOMPARE(rpc::rpc_sync("worker1", "test.local_value", {r}).tensor().to_vector<float>(),
               std::vector<float>(9, 7.0f));
    }
    barrier();
    // Every fork is gone: the owner freed both values.
    if (rank_ == 0) QVERIFY(eventually([] { return remote_owned(1) == 0; }));
    barrier();
  }

  void testErrorsReachTheCaller() {
    if (rank_ == 0) {
      try {
        rpc::rpc_sync("worker1", "test.boom");
        QFAIL("a remote exception was lost");
      } catch (const rpc::RpcError& e) {
        QVERIFY2(QString(e.what()).contains("Error on worker 1 (worker1): boom: the remote function failed"), e.what());
        QVERIFY2(!QString(e.what()).contains(".cpp:"), e.what());  // no source location of the callee
      }
      try {
        rpc::rpc_sync("worker1", "no.such.function");
        QFAIL("an unknown function was called");
      } catch (const rpc::RpcError& e) {
        QVERIFY2(QString(e.what()).contains("unknown function 'no.such.function'"), e.what());
      }
      try {
        rpc::rpc_sync("worker1", add, Tensor::ones({2}), Tensor::ones({3}));
        QFAIL("a shape error was lost");
      } catch (const rpc::RpcError& e) {
        QVERIFY2(QString(e.what()).startsWith("Error on worker 1 (worker1): "), e.what());
      }
      rpc::RRef bad = rpc::remote("worker1", "test.boom");
      try {
        bad.to_here();
        QFAIL("to_here of a failed remote call succeeded");
      } catch (const rpc::RpcError& e) {
        QVERIFY2(QString(e.what()).contains("boom"), e.what());
      }
      // The agent still serves.
      QCOMPARE(rpc::rpc_sync("worker1", "echo", {rpc::Value(int64_t{5})}).to_int(), int64_t{5});
    }
    barrier();
  }

  // An async function's reply goes when its future completes; its error reaches the
  // caller like any other; remote() refuses it clearly.
  void testAsyncFunctions() {
    if (rank_ == 0) {
      const Tensor one = Tensor::ones({2});
      const Tensor sum =
          rpc::rpc_sync(1, "test.async_add", {rpc::Value(one), rpc::Value(one), rpc::Value(false)}).tensor();
      QCOMPARE(sum.to_vector<float>(), (std::vector<float>{2, 2}));
      try {
        rpc::rpc_sync(1, "test.async_add", {rpc::Value(one), rpc::Value(one), rpc::Value(true)});
        QFAIL("the async error did not arrive");
      } catch (const rpc::RpcError& e) {
        QCOMPARE(QString::fromStdString(e.message()), QString("Error on worker 1 (worker1): async boom"));
      }
      try {
        rpc::remote(1, "test.async_add", {rpc::Value(one), rpc::Value(one), rpc::Value(false)}).to_here();
        QFAIL("remote() ran an async function");
      } catch (const rpc::RpcError& e) {
        QVERIFY2(QString::fromStdString(e.message()).contains("answers asynchronously"), e.what());
      }
    }
    barrier();
  }

  void testTimeoutNamesCallDestinationAndTime() {
    if (rank_ == 0) {
      const auto start = std::chrono::steady_clock::now();
      try {
        rpc::rpc_sync("worker1", "sleep_ms", {rpc::Value(int64_t{1500})}, 200ms);
        QFAIL("no timeout");
      } catch (const rpc::RpcError& e) {
        QVERIFY2(QString(e.what()).contains("the call of 'sleep_ms' to worker1 (id 1) got no answer within 200 ms"),
                 e.what());
      }
      QVERIFY(std::chrono::steady_clock::now() - start < 1200ms);
    }
    barrier();  // the sleeping call finishes on worker1 and its late reply is dropped
  }

  void testForeignAndMalformedMessagesAreRejected() {
    using rpc::wire::MessageType;
    if (rank_ == 0) {
      const std::string token = rpc::agent().token_for_tests();
      auto stats = [] {
        const auto l = rpc::rpc_sync("worker1", "test.stats").list();
        return std::make_pair(l[0].to_int(), l[1].to_int());
      };
      const auto before = stats();
      rpc::wire::BodyWriter call;
      call.list(2);
      call.string("echo");
      call.list(0);
      const std::string good_body = call.take();
      send_raw(1, {"no token", header_bytes(MessageType::Call, 0, 1, 0), good_body});
      send_raw(1, {header_bytes(MessageType::Call, 0, 1, 0), good_body});  // token left out
      send_raw(1, {token, "short header", good_body});
      send_raw(1, {token, header_bytes(MessageType::Call, 0, 1, 0), good_body.substr(0, 7)});  // truncated
      send_raw(1, {token, header_bytes(static_cast<MessageType>(77), 0, 1, 0), good_body});    // unknown type
      rpc::wire::BodyWriter huge;  // a tensor claiming 2^40 elements with a 4-byte frame
      huge.list(2);
      huge.string("echo");
      huge.list(1);
      huge.tensor(0, false, {int64_t{1} << 40}, 0);
      send_raw(1, {token, header_bytes(MessageType::Call, 0, 1, 1), huge.take(), "abcd"});
      rpc::wire::BodyWriter dtype;  // dtype code 9 does not exist
      dtype.list(2);
      dtype.string("echo");
      dtype.list(1);
      dtype.tensor(9, false, {1}, 0);
      send_raw(1, {token, header_bytes(MessageType::Call, 0, 1, 1), dtype.take(), "abcd"});
      send_raw(1, {token, header_bytes(MessageType::Call, 0, 1, 4096), good_body});  // frames missing
      QVERIFY(eventually([&] {
        const auto now = stats();
        return now.first >= before.first + 2 && now.second >= before.second + 6;
      }));
      // Still serving, for everyone.
      QCOMPARE(rpc::rpc_sync("worker1", "echo", {rpc::Value("alive")}).str(), std::string("alive"));
    }
    barrier();
  }

  void cleanupTestCase() {
    // Calls in flight when shutdown starts still complete: graceful shutdown waits for
    // every worker's outstanding work before any agent stops.
    std::vector<std::shared_ptr<rpc::ValueFuture>> in_flight;
    const int to = (rank_ + 1) % size_;
    for (int i = 0; i < 8; ++i)
      in_flight.push_back(rpc::rpc_async(to, "test.slow_value", {rpc::Value(int64_t{50}), rpc::Value(int64_t{i})}));
    rpc::shutdown(true);
    for (int i = 0; i < 8; ++i) {
      QVERIFY(in_flight[i]->completed());
      QCOMPARE(in_flight[i]->wait().to_int(), int64_t{i});
    }
    QVERIFY(!rpc::is_initialized());
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestRpc)
#include "tst_rpc.moc"
