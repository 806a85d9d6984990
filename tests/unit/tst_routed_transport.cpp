// Shared memory and TCP routed together (routed_transport.h), as jobs use them: a worker
// of this host is reached by shared memory, one of another host (another domain key) and
// one whose socket cannot be reached by TCP, each reported connected once; a worker's
// endpoints travel as one string and come back as the list; an endpoint no transport
// reaches (ZeroMQ's) is named with the worker and the setting to make the same.
#include <QtTest/QtTest>

#include <cstring>

#include "ddpscope/error.h"
#include "rpc/routed_transport.h"
#include "rpc/shm_transport.h"
#include "rpc/tcp_transport.h"
#include "rpc/transport_choice.h"
#include "test_registry.h"
#include "transport_test_events.h"

using namespace ddpscope;
using namespace ddpscope::rpc;
using namespace ddpscope::rpc::testing;

namespace {

std::unique_ptr<RoutedTransport> openRouted() {
  auto t = open_transport("shm", "127.0.0.1", 1 << 20);
  auto* r = dynamic_cast<RoutedTransport*>(t.release());
  return std::unique_ptr<RoutedTransport>(r);
}

// The same worker's endpoints with its shared-memory one moved to another domain (host).
std::string onAnotherHost(const std::string& endpoint) {
  const size_t start = std::strlen(ShmTransport::kScheme);
  return std::string(ShmTransport::kScheme) + "another-host" + endpoint.substr(endpoint.find('/', start));
}

bool byShm(const RoutedTransport& t, int32_t peer) { return dynamic_cast<ShmTransport*>(t.route_of(peer)); }
bool byTcp(const RoutedTransport& t, int32_t peer) { return dynamic_cast<TcpTransport*>(t.route_of(peer)); }

}  // namespace

class TestRoutedTransport : public QObject {
  Q_OBJECT

 private slots:
  void testAWorkersEndpointsTravelAsOneString() {
    auto a = openRouted();
    const std::vector<std::string> list = RoutedTransport::split_endpoints(a->endpoint());
    QCOMPARE(list.size(), size_t{2});
    QVERIFY2(list[0].rfind(ShmTransport::kScheme, 0) == 0, list[0].c_str());
    QVERIFY2(list[1].rfind("ddptcp://127.0.0.1:", 0) == 0, list[1].c_str());
    QCOMPARE(RoutedTransport::join_endpoints(list), a->endpoint());
    QCOMPARE(RoutedTransport::split_endpoints(",x,,y,"), (std::vector<std::string>{"x", "y"}));
  }

  void testAWorkerOfThisHostBySharedMemoryAnotherByTcp() {
    auto a = openRouted(), b = openRouted();
    a->connect({a->endpoint(), onAnotherHost(b->endpoint())});
    b->connect({onAnotherHost(a->endpoint()), b->endpoint()});
    QVERIFY(byShm(*a, 0) && byTcp(*a, 1));
    QVERIFY(byTcp(*b, 0) && byShm(*b, 1));
    const std::string s = "over the network";
    a->send(1, {copied(s)});
    b->send(0, {copied(s)});
    a->send(0, {copied(s)});  // to itself, by shared memory
    Heard ha, hb;
    QVERIFY(pollBoth(*a, ha, *b, hb, [&] { return ha.messages.size() == 2 && hb.messages.size() == 1; }));
    QCOMPARE(text(hb.messages[0].frames[0]), s);
    QCOMPARE(std::count(ha.connected.begin(), ha.connected.end(), 1), 1);
    QCOMPARE(std::count(ha.connected.begin(), ha.connected.end(), 0), 1);
  }

  void testASocketThatCannotBeReachedFallsBackToTcp() {
    auto a = openRouted(), b = openRouted();
    std::string unreachable = b->endpoint();
    const size_t slash = unreachable.find('/', std::strlen(ShmTransport::kScheme));
    unreachable.replace(slash + 1, unreachable.find(',') - slash - 1, "no-such-socket");
    a->connect({a->endpoint(), unreachable});
    b->connect({a->endpoint(), b->endpoint()});
    QVERIFY(byTcp(*a, 1));
    QVERIFY(byShm(*b, 0));
    const std::string s = "by TCP after all";
    a->send(1, {copied(s)});
    b->send(0, {copied(s)});
    Heard ha, hb;
    QVERIFY(pollBoth(*a, ha, *b, hb, [&] { return ha.messages.size() == 1 && hb.messages.size() == 1; }));
    QCOMPARE(text(hb.messages[0].frames[0]), s);
  }

  // Polled without waiting, it still handles what its transports' descriptors have ready:
  // here worker 1 must accept worker 0's ring (its hello) before the message can arrive.
  void testPollWithoutWaitingHandlesTheDescriptors() {
    auto a = openRouted(), b = openRouted();
    a->connect({a->endpoint(), b->endpoint()});
    b->connect({a->endpoint(), b->endpoint()});
    const std::string s = "through a ring accepted by poll(0)";
    a->send(1, {copied(s)});
    Heard hb;
    QElapsedTimer timer;
    timer.start();
    while (hb.messages.empty() && timer.elapsed() < 5000)
      b->poll(std::chrono::milliseconds(0), hb);
    QCOMPARE(hb.messages.size(), size_t{1});
    QCOMPARE(text(hb.messages[0].frames[0]), s);
  }

  void testAnEndpointNoTransportReachesIsNamed() {
    auto a = openRouted();
    try {
      a->connect({a->endpoint(), "tcp://127.0.0.1:5555"});
      QFAIL("took a ZeroMQ worker's endpoint");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("worker 1") && QString(e.what()).contains("DDPSCOPE_RPC_TRANSPORT"),
               e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRoutedTransport)
#include "tst_routed_transport.moc"
