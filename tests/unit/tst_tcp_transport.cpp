// What the TCP transport alone does, on loopback (what every transport does is
// tst_transport_conformance): its endpoint; traffic that is not this transport's (too many
// frames, a frame past the limit, HTTP) is refused and its connection dropped, while good
// peers go on; strangers that show no token are dropped in time, and past a cap make room
// for a worker; a worker that is not listening is lost at once; an address it cannot bind,
// or a ZeroMQ worker's endpoint, is named.
#include <QtTest/QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "ddpscope/error.h"
#include "transport_test_events.h"
#include "rpc/tcp_transport.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::rpc;
using namespace ddpscope::rpc::testing;

namespace {

// A plain socket connected to `endpoint` (ddptcp://127.0.0.1:PORT), for traffic of our own making.
int rawTcpConnection(const std::string& endpoint) {
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
  return fd;
}

}  // namespace

class TestTcpTransport : public QObject {
  Q_OBJECT

 private slots:
  // Bytes that are not this transport's: refused, that connection dropped; peers go on.
  void testForeignTrafficIsRefusedAndItsConnectionDropped() {
    QFETCH(QByteArray, bytes);
    TcpTransport a("127.0.0.1", 1 << 20), b("127.0.0.1", 1 << 20);
    a.connect({a.endpoint(), b.endpoint()});
    b.connect({a.endpoint(), b.endpoint()});
    const int raw = rawTcpConnection(b.endpoint());
    QVERIFY(raw >= 0);
    QCOMPARE(::write(raw, bytes.constData(), static_cast<size_t>(bytes.size())), static_cast<ssize_t>(bytes.size()));
    Heard heard;
    QVERIFY(pollUntil(b, heard, [&] { return heard.rejected == 1; }));
    char c;
    QCOMPARE(::read(raw, &c, 1), ssize_t{0});  // dropped: end of stream
    ::close(raw);
    const std::string fine = "fine";
    a.send(1, {copied(fine)});
    QVERIFY(pollUntil(b, heard, [&] { return heard.messages.size() == 1; }));
    QCOMPARE(text(heard.messages[0].frames[0]), fine);
  }
  void testForeignTrafficIsRefusedAndItsConnectionDropped_data() {
    QTest::addColumn<QByteArray>("bytes");
    const auto u32 = [](uint32_t v) { return QByteArray(reinterpret_cast<const char*>(&v), 4); };
    const auto u64 = [](uint64_t v) { return QByteArray(reinterpret_cast<const char*>(&v), 8); };
    QTest::newRow("too many frames") << u32(wire::kMaxTensors + 4);
    QTest::newRow("no frames") << u32(0);
    QTest::newRow("a frame past the limit") << u32(1) + u64((1 << 20) + 1);
    QTest::newRow("an HTTP request") << QByteArray("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  }

  // Idle connections that never show the token (one sends nothing, one a frame count and
  // no more) are dropped once the limit passes and counted; the workers' own connections,
  // greeted with the token at connect(), stay and carry messages after it.
  void testStrangersThatShowNoTokenAreDroppedInTime() {
    const std::string token = "job-token-0123456789";
    TcpTransport a("127.0.0.1", 1 << 20), b("127.0.0.1", 1 << 20);
    a.expect_token(token), b.expect_token(token);
    b.set_unverified_limit(std::chrono::milliseconds(300));
    a.connect({a.endpoint(), b.endpoint()});
    b.connect({a.endpoint(), b.endpoint()});
    const int silent = rawTcpConnection(b.endpoint()), dribbling = rawTcpConnection(b.endpoint());
    QVERIFY(silent >= 0 && dribbling >= 0);
    const uint32_t count = 3;
    QCOMPARE(::write(dribbling, &count, 4), ssize_t{4});
    Heard heard;
    QVERIFY(pollUntil(b, heard, [&] { return heard.rejected == 2; }));
    QVERIFY2(heard.last_rejection.find("showed no token in 300 ms") != std::string::npos, heard.last_rejection.c_str());
    char c;
    QCOMPARE(::read(silent, &c, 1), ssize_t{0});  // dropped: end of stream
    QCOMPARE(::read(dribbling, &c, 1), ssize_t{0});
    ::close(silent), ::close(dribbling);
    const std::string body = "after the limit";
    a.send(1, {copied(token), copied(body)});
    QVERIFY(pollUntil(b, heard, [&] { return heard.messages.size() == 1; }));
    QCOMPARE(heard.messages[0].frames.size(), size_t{2});  // the greeting itself is not delivered
    QCOMPARE(text(heard.messages[0].frames[1]), body);
    QCOMPARE(heard.rejected, 2);
  }

  // More than 64 strangers waiting: the oldest go, so a worker that connects after them
  // is still heard.
  void testStrangersBeyondTheCapMakeRoomForAWorker() {
    const std::string token = "job-token-0123456789";
    TcpTransport a("127.0.0.1", 1 << 20), b("127.0.0.1", 1 << 20);
    a.expect_token(token), b.expect_token(token);
    std::vector<int> strangers;
    Heard heard;
    for (int i = 0; i < 80; ++i) {
      strangers.push_back(rawTcpConnection(b.endpoint()));
      QVERIFY(strangers.back() >= 0);
      if (i % 16 == 15) b.poll(std::chrono::milliseconds(10), heard);  // accepted in turn, oldest first
    }
    QVERIFY(pollUntil(b, heard, [&] { return heard.rejected >= 16; }));
    a.connect({a.endpoint(), b.endpoint()});
    b.connect({a.endpoint(), b.endpoint()});
    const std::string body = "heard";
    a.send(1, {copied(token), copied(body)});
    QVERIFY(pollUntil(b, heard, [&] { return heard.messages.size() == 1; }));
    QCOMPARE(text(heard.messages[0].frames[1]), body);
    char c;
    QCOMPARE(::read(strangers.front(), &c, 1), ssize_t{0});  // the oldest was dropped
    for (int fd : strangers)
      ::close(fd);
  }

  void testItsEndpointNamesItsSchemeAndAddress() {
    TcpTransport a("127.0.0.1", 1 << 20);
    QVERIFY2(a.endpoint().rfind("ddptcp://127.0.0.1:", 0) == 0, a.endpoint().c_str());
  }

  void testAWorkerThatIsNotListeningIsLostAtOnce() {
    TcpTransport a("127.0.0.1", 1 << 20);
    std::string gone;
    {
      TcpTransport b("127.0.0.1", 1 << 20);
      gone = b.endpoint();
    }
    a.connect({a.endpoint(), gone});
    Heard heard;
    QVERIFY(pollUntil(a, heard, [&] { return heard.lost == std::vector<int32_t>{1}; }));
  }

  void testAnAddressItCannotBindIsNamed() {
    try {
      TcpTransport t("203.0.113.7", 1 << 20);  // TEST-NET-3: no interface here has it
      QFAIL("bound an address this host does not have");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("203.0.113.7"), e.what());
    }
  }

  void testAnotherTransportsEndpointIsNamed() {
    TcpTransport a("127.0.0.1", 1 << 20);
    try {
      a.connect({a.endpoint(), "tcp://127.0.0.1:5555"});
      QFAIL("took a ZeroMQ endpoint");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("worker 1") && QString(e.what()).contains("DDPSCOPE_RPC_TRANSPORT"),
               e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTcpTransport)
#include "tst_tcp_transport.moc"
