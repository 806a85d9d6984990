// The RRef protocol across real processes (2, 3 and 4 ranks under mpirun): its three
// sharing cases (owner to user, owner to itself, user to user with messages out of
// order) and a delete retried when its message was dropped. Rank 0 drives; every rank
// serves, and each case ends with a barrier.
#include <QtTest/QtTest>

#include "rpc_workers.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::testing::rpc_workers;
using namespace std::chrono_literals;

class TestRRefContext : public WorldTest {
  Q_OBJECT

 private slots:

  void initTestCase() {
    join_world(g_world);
    start_worker();
  }

  void cleanupTestCase() { rpc::shutdown(true); }

  // owner -> user: worker1 makes an OwnerRRef and returns it to worker0.
  void testRRefOwnerToUser() {
    if (rank_ == 0) {
      {
        rpc::Value v = rpc::rpc_sync("worker1", "test.make_rref", {rpc::Value("from worker1")});
        const rpc::RRef& r = v.rref();
        QCOMPARE(r.owner(), 1);
        QVERIFY(!r.is_owner());
        QCOMPARE(remote_owned(1), int64_t{1});  // registered before it was sent
        QCOMPARE(r.to_here().str(), std::string("from worker1"));
      }
      // G1: the owner learns the user is gone and frees the value.
      QVERIFY(eventually([] { return remote_owned(1) == 0; }));
    }
    barrier();
  }

  // owner -> itself: an OwnerRRef made by make_rref, passed in a call to its own worker,
  // arrives as the same OwnerRRef with its value; nothing stays registered afterwards.
  void testRRefOwnerToItself() {
    if (rank_ == 0) {
      {
        rpc::RRef r = rpc::make_rref(rpc::Value("mine"));
        QCOMPARE(rpc::rpc_sync(0, "test.local_value", {rpc::Value(r)}, 5000ms).str(), std::string("mine"));
        QVERIFY(rpc::rpc_sync(0, "test.is_owner", {rpc::Value(r)}).to_bool());
      }
      QVERIFY(eventually([] { return remote_owned(0) == 0; }));
    }
    barrier();
  }

  // user -> user: worker0's UserRRef of worker1's value goes to worker2, with the
  // owner's remote call delayed so the child's fork request arrives before it, and the
  // child's accept to the parent delayed so the parent must keep its fork meanwhile.
  void testRRefUserToUserOutOfOrder() {
    if (size_ < 3) QSKIP("user -> user sharing needs a third worker (runs with 3 and 4 ranks)");
    using rpc::wire::MessageType;
    if (rank_ == 0) {
      rpc::rpc_sync("worker1", "test.inject_delay",
                    {rpc::Value(int64_t(MessageType::RemoteCall)), rpc::Value(int64_t{300}), rpc::Value(int64_t{1})});
      g_faults->delay_incoming(MessageType::RRefChildAccept, 400ms, 1);
      auto fut = [] {
        rpc::RRef r = rpc::remote("worker1", "add", {Tensor::ones({4}), Tensor::ones({4})});
        // Sent on at once, long before worker1 has even seen the remote call.
        return rpc::rpc_async("worker2", "test.to_here", {r});
      }();  // worker0's own handle is gone now; G2 keeps its fork until worker2 is known
      QVERIFY(rpc::agent().rrefs().pending() >= 1);
      QCOMPARE(fut->wait().tensor().to_vector<float>(), std::vector<float>(4, 2.0f));
      QVERIFY(eventually([] { return rpc::agent().rrefs().pending() == 0; }));
      QVERIFY(eventually([] { return remote_owned(1) == 0; }));
      QCOMPARE(rpc::rpc_sync("worker2", "test.pending").to_int(), int64_t{0});
    }
    barrier();
  }

  // Control messages are retried until acknowledged and applied once.
  void testRRefDeleteRetriedWhenDropped() {
    using rpc::wire::MessageType;
    if (rank_ == 0) {
      rpc::rpc_sync("worker1", "test.inject_drop",
                    {rpc::Value(int64_t(MessageType::RRefUserDelete)), rpc::Value(int64_t{2})});
      const auto retries_before = rpc::agent().stats().control_retries;
      {
        rpc::RRef r = rpc::remote("worker1", "echo", {rpc::Value("x")});
        QCOMPARE(r.to_here().str(), std::string("x"));
      }
      QVERIFY(eventually([] { return remote_owned(1) == 0; }));
      QVERIFY(rpc::agent().stats().control_retries >= retries_before + 2);
    }
    barrier();
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestRRefContext)
#include "tst_rref_context.moc"
