// RPC start-up over a process group under mpirun (2 and 3 ranks): every rank learns every
// worker's name, endpoint and the one token; names must be unique, and a rank that cannot
// listen makes every rank fail naming it instead of waiting for ever.
#include <QtTest/QtTest>

#include "c10d/process_group.h"
#include "ddpscope/error.h"
#include "mpi_test_main.h"
#include "rpc/rpc_bootstrap.h"
#include "rpc/tcp_transport.h"
#include "rpc/transport.h"
#include "rpc/transport_choice.h"

using namespace ddpscope;
using namespace ddpscope::rpc;

class TestRpcBootstrap : public WorldTest {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> m_world;

 private slots:
  void initTestCase() { join_world(m_world); }

  void testEveryRankLearnsEveryWorker() {
    RpcBackendOptions options;
    Bootstrap b = bootstrap_over_group(*m_world, "", options);
    QCOMPARE(b.setup.self, rank_);
    QCOMPARE(static_cast<int>(b.setup.workers.size()), size_);
    QCOMPARE(static_cast<int>(b.setup.endpoints.size()), size_);
    for (int r = 0; r < size_; ++r) {
      QCOMPARE(b.setup.workers[r].id, r);
      QCOMPARE(b.setup.workers[r].name, "worker" + std::to_string(r));
      QVERIFY2(endpoint_host_port(b.setup.endpoints[r]).rfind("127.0.0.1:", 0) == 0,
               b.setup.endpoints[r].c_str());  // one host
    }
    QCOMPARE(b.setup.endpoints[rank_], b.transport->endpoint());
    // One token, the same on every rank.
    QVERIFY(!b.setup.token.empty());
    std::vector<Tensor> all(size_, Tensor());
    for (auto& t : all)
      t = Tensor::zeros({1}, DType::I64);
    Tensor mine = Tensor::full({1}, double(std::hash<std::string>{}(b.setup.token) % 1000003), DType::I64);
    m_world->allgather(all, mine)->wait();
    for (auto& t : all)
      QCOMPARE(t.item<int64_t>(), mine.item<int64_t>());
    b.transport->close();
  }

  void testTwoWorkersOfOneNameAreRefused() {
    RpcBackendOptions options;
    try {
      Bootstrap b = bootstrap_over_group(*m_world, "same", options);
      QFAIL("two workers named alike were accepted");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("two workers are named 'same'"), e.what());
    }
  }

  void testARankThatCannotListenIsNamedOnEveryRank() {
    RpcBackendOptions options;
    if (rank_ == size_ - 1) options.listen_address = "203.0.113.7";  // TEST-NET-3: not this host's
    try {
      Bootstrap b = bootstrap_over_group(*m_world, "", options);
      QFAIL("a rank that could not listen went unnoticed");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains(QString("rank %1 could not start its RPC agent").arg(size_ - 1)), e.what());
    }
    m_world->barrier()->wait();  // every rank got here: none waits for ever
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestRpcBootstrap)
#include "tst_rpc_bootstrap.moc"
