// The ZeroMQ transport on loopback, two ends in one process: frames arrive whole and in
// order, a large frame is sent from its owner's bytes, a message of too many frames is
// refused, peers are reported connected and lost, a closed transport refuses to send, and an address it cannot bind is
// named.
#include <QtTest/QtTest>

#include <QElapsedTimer>
#include <memory>

#include "ddpscope/error.h"
#include "transport_test_events.h"
#include "rpc/zmq_transport.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::rpc;
using namespace ddpscope::rpc::testing;

class TestZmqTransport : public QObject {
  Q_OBJECT

 private slots:
  void testFramesArriveWholeAndInOrder() {
    ZmqTransport a("127.0.0.1", 1 << 20), b("127.0.0.1", 1 << 20);
    QVERIFY(a.endpoint().rfind("tcp://127.0.0.1:", 0) == 0);
    a.connect({a.endpoint(), b.endpoint()});
    b.connect({a.endpoint(), b.endpoint()});
    const std::string one = "first", two = "second frame";
    for (int i = 0; i < 3; ++i)
      a.send(1, {copied(one), copied(two + std::to_string(i))});
    // A large frame sent from its owner's bytes, without a copy.
    auto big = std::make_shared<std::string>(300000, 'x');
    a.send(1, {{big->data(), big->size(), big}});
    Heard heard;
    QVERIFY(pollUntil(b, heard, [&] { return heard.messages.size() == 4; }));
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(heard.messages[i].frames.size(), size_t{2});
      QCOMPARE(text(heard.messages[i].frames[0]), one);
      QCOMPARE(text(heard.messages[i].frames[1]), two + std::to_string(i));
    }
    QCOMPARE(text(heard.messages[3].frames[0]), *big);
  }

  // More frames than any message has are read and dropped, and the message refused.
  void testAMessageOfTooManyFramesIsRefused() {
    ZmqTransport a("127.0.0.1", 1 << 20), b("127.0.0.1", 1 << 20);
    a.connect({a.endpoint(), b.endpoint()});
    b.connect({a.endpoint(), b.endpoint()});
    const std::string s = "f";
    std::vector<OutgoingFrame> many(wire::kMaxTensors + 4, copied(s));
    a.send(1, many);
    a.send(1, {copied(s)});
    Heard heard;
    QVERIFY(pollUntil(b, heard, [&] { return heard.rejected == 1 && heard.messages.size() == 1; }));
  }

  void testPeersConnectedAndLost() {
    ZmqTransport a("127.0.0.1", 1 << 20);
    auto b = std::make_unique<ZmqTransport>("127.0.0.1", 1 << 20);
    a.connect({a.endpoint(), b->endpoint()});
    b->connect({a.endpoint(), b->endpoint()});
    Heard heard;
    QVERIFY(pollUntil(a, heard, [&] { return std::count(heard.connected.begin(), heard.connected.end(), 1) > 0; }));
    b->close();
    b.reset();
    QVERIFY2(pollUntil(a, heard, [&] { return std::count(heard.lost.begin(), heard.lost.end(), 1) > 0; }),
             "worker 1's end closed: reported lost");
  }

  void testAClosedTransportRefusesToSend() {
    ZmqTransport a("127.0.0.1", 1 << 20);
    a.connect({a.endpoint()});
    a.close();
    a.close();  // idempotent
    const std::string s = "late";
    QVERIFY_THROWS_EXCEPTION(Error, a.send(0, {copied(s)}));
  }

  void testAnAddressItCannotBindIsNamed() {
    try {
      ZmqTransport t("203.0.113.7", 1 << 20);  // TEST-NET-3: no interface here has it
      QFAIL("bound an address this host does not have");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("203.0.113.7"), e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestZmqTransport)
#include "tst_zmq_transport.moc"
