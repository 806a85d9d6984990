// Which RPC transport an agent opens: the option, else DDPSCOPE_RPC_TRANSPORT, else shared
// memory; another name is refused naming the choices; each kind listens with its own
// scheme, and each endpoint's TCP address is found.
#include <QtTest/QtTest>

#include "ddpscope/error.h"
#include "rpc/transport_choice.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::rpc;

class TestTransportChoice : public QObject {
  Q_OBJECT

 private slots:
  void testTheOptionThenTheEnvironmentThenSharedMemory() {
    qunsetenv("DDPSCOPE_RPC_TRANSPORT");
    QCOMPARE(transport_kind(""), std::string("shm"));
    qputenv("DDPSCOPE_RPC_TRANSPORT", "tcp");
    QCOMPARE(transport_kind(""), std::string("tcp"));
    QCOMPARE(transport_kind("zmq"), std::string("zmq"));  // the option wins
    qputenv("DDPSCOPE_RPC_TRANSPORT", "carrier-pigeon");
    try {
      transport_kind("");
      QFAIL("took an unknown transport");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("carrier-pigeon") && QString(e.what()).contains("shm, tcp or zmq"), e.what());
    }
    qunsetenv("DDPSCOPE_RPC_TRANSPORT");
  }

  void testEachKindListensWithItsScheme() {
    QVERIFY(open_transport("zmq", "127.0.0.1", 1 << 20)->endpoint().rfind("tcp://127.0.0.1:", 0) == 0);
    QVERIFY(open_transport("tcp", "127.0.0.1", 1 << 20)->endpoint().rfind("ddptcp://127.0.0.1:", 0) == 0);
    const std::string shm = open_transport("shm", "127.0.0.1", 1 << 20)->endpoint();
    QVERIFY2(shm.rfind("ddpshm://", 0) == 0 && shm.find(",ddptcp://127.0.0.1:") != std::string::npos, shm.c_str());
  }

  void testTheTcpAddressOfEachKindsEndpoint() {
    QCOMPARE(endpoint_host_port("tcp://10.0.0.2:5555"), std::string("10.0.0.2:5555"));
    QCOMPARE(endpoint_host_port("ddptcp://[::1]:7"), std::string("[::1]:7"));
    QCOMPARE(endpoint_host_port("ddpshm://boot-1.2/ddpscope-rpc-9-9,ddptcp://10.0.0.2:41000"),
             std::string("10.0.0.2:41000"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTransportChoice)
#include "tst_transport_choice.moc"
