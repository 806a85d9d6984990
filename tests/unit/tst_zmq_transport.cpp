// The ZeroMQ transport on loopback, two ends in one process: frames arrive whole and in
// order, a large frame is sent from its owner's bytes, a connection without the job's
// token sends nothing, a message of too many frames is
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
  // A connection without the job's token is refused during ZeroMQ's handshake, before it
  // can send a message: its 16 MiB frame is never read (issue 68: the ROUTER read frames
  // up to 4 GiB before the agent looked at the token); a worker with it is heard.
  void testAConnectionWithoutTheTokenSendsNothing() {
    ZmqTransport a("127.0.0.1", 1 << 30), b("127.0.0.1", 1 << 30);
    a.expect_token("secret-token");
    b.expect_token("secret-token");
    a.connect({a.endpoint(), b.endpoint()});
    b.connect({a.endpoint(), b.endpoint()});
    zmq::context_t context(1);
    std::vector<std::unique_ptr<zmq::socket_t>> strangers;
    for (const char* password : {"a-guess", ""}) {  // a wrong token, and none (ZeroMQ's NULL)
      auto s = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
      s->set(zmq::sockopt::linger, 0);
      if (*password) {
        s->set(zmq::sockopt::plain_username, kRpcPlainUser);
        s->set(zmq::sockopt::plain_password, password);
      }
      s->connect(b.endpoint());
      s->send(zmq::message_t(size_t{16} << 20), zmq::send_flags::dontwait);
      strangers.push_back(std::move(s));
    }
    Heard heard;
    QVERIFY(pollUntil(b, heard, [&] { return b.refused_connections() >= 1; }));
    const std::string fine = "fine";
    a.send(1, {copied(fine)});
    QVERIFY(pollUntil(b, heard, [&] { return heard.messages.size() == 1; }));
    QTest::qWait(300);
    b.poll(std::chrono::milliseconds(50), heard);
    QCOMPARE(heard.messages.size(), size_t{1});
    QCOMPARE(text(heard.messages[0].frames[0]), fine);
    // Each refused handshake is told as a refusal (the run's stats count it); no message of
    // theirs was read.
    QVERIFY(heard.rejected >= 2);
    QVERIFY2(heard.last_rejection.find("did not show this job's token") != std::string::npos,
             heard.last_rejection.c_str());
    strangers.clear();
  }

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
