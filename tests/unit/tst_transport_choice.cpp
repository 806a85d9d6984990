// Which RPC transport an agent opens: the option, else DDPSCOPE_RPC_TRANSPORT, else ZeroMQ;
// another name is refused naming the choices; each kind listens with its own scheme.
#include <QtTest/QtTest>

#include "ddpscope/error.h"
#include "rpc/transport_choice.h"

using namespace ddpscope;
using namespace ddpscope::rpc;

class TestTransportChoice : public QObject {
  Q_OBJECT

 private slots:
  void testTheOptionThenTheEnvironmentThenZeroMq() {
    qunsetenv("DDPSCOPE_RPC_TRANSPORT");
    QCOMPARE(transport_kind(""), std::string("zmq"));
    qputenv("DDPSCOPE_RPC_TRANSPORT", "tcp");
    QCOMPARE(transport_kind(""), std::string("tcp"));
    QCOMPARE(transport_kind("zmq"), std::string("zmq"));  // the option wins
    qputenv("DDPSCOPE_RPC_TRANSPORT", "carrier-pigeon");
    try {
      transport_kind("");
      QFAIL("took an unknown transport");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("carrier-pigeon") && QString(e.what()).contains("zmq or tcp"), e.what());
    }
    qunsetenv("DDPSCOPE_RPC_TRANSPORT");
  }

  void testEachKindListensWithItsScheme() {
    QVERIFY(open_transport("zmq", "127.0.0.1", 1 << 20)->endpoint().rfind("tcp://127.0.0.1:", 0) == 0);
    QVERIFY(open_transport("tcp", "127.0.0.1", 1 << 20)->endpoint().rfind("ddptcp://127.0.0.1:", 0) == 0);
  }
};

QTEST_GUILESS_MAIN(TestTransportChoice)
#include "tst_transport_choice.moc"
