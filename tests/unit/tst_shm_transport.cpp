// What the shared-memory transport alone does, two ends in one process (what every
// transport does, through rings far smaller than a message too, is tst_transport_conformance):
// workers of one host share memory; a ring is made only for a pair that talks; a worker of
// another host (another key), or one whose socket cannot be reached, is not served (TCP
// reaches it: tst_routed_transport); a hello that is not a worker's is refused by name;
// idle connections hold no read buffer; a worker that closes is reported lost, and what it
// wrote whole before is delivered; a steady stream starves no descriptor; another
// transport's endpoint is named.
#include <QtTest/QtTest>

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>

#include "ddpscope/error.h"
#include "rpc/routed_transport.h"
#include "rpc/shm_handshake.h"
#include "rpc/shm_transport.h"
#include "transport_test_events.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::rpc;
using namespace ddpscope::rpc::testing;

namespace {

// A Unix socket connected to the worker of `endpoint`, for a hello of our own making.
int rawUnixConnection(const std::string& endpoint) {
  const size_t slash = endpoint.find('/', std::strlen(ShmTransport::kScheme));
  const std::string name = endpoint.substr(slash + 1, endpoint.find(',') - slash - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return ::connect(fd, reinterpret_cast<sockaddr*>(&a), length) == 0 ? fd : -1;
}

// Rings mapped in this process (both ends of each live here).
int ringsMapped() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("memfd:ddpscope-rpc-ring") != std::string::npos;
  return n;
}

// This process's resident memory in KiB.
long residentKib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::string otherHost(const std::string& endpoint) {  // the same worker, as if on another host
  const size_t start = std::strlen(ShmTransport::kScheme);
  return std::string(ShmTransport::kScheme) + "another-host" + endpoint.substr(endpoint.find('/', start));
}

}  // namespace

class TestShmTransport : public QObject {
  Q_OBJECT

 private slots:
  // Its endpoint names its domain (host) key and socket; two workers of one host share memory.
  void testWorkersOfOneHostShareMemory() {
    ShmTransport a(1 << 20), b(1 << 20);
    QVERIFY2(a.endpoint().rfind("ddpshm://", 0) == 0, a.endpoint().c_str());
    QVERIFY2(a.endpoint() ==
                 std::string(ShmTransport::kScheme) + a.domain_key() + a.endpoint().substr(a.endpoint().find('/', 9)),
             a.endpoint().c_str());
    QVERIFY(a.accepts(b.endpoint()) && !a.accepts(otherHost(b.endpoint())) && !a.accepts("ddptcp://127.0.0.1:1"));
    a.connect({a.endpoint(), b.endpoint()});
    QVERIFY(a.serves(0) && a.serves(1));
  }

  // Three workers of one host connect to each other, but a ring exists only for a pair
  // that has sent something: memory for the pairs that talk.
  void testARingIsMadeWithTheFirstMessageOnly() {
    ShmTransport a(1 << 20), b(1 << 20), c(1 << 20);
    const std::vector<std::string> all = {a.endpoint(), b.endpoint(), c.endpoint()};
    a.connect(all);
    b.connect(all);
    c.connect(all);
    const int before = ringsMapped();
    const std::string s = "one pair talks";
    a.send(1, {copied(s)});
    Heard ha, hb;
    QVERIFY(pollBoth(a, ha, b, hb, [&] { return hb.messages.size() == 1; }));
    QCOMPARE(ringsMapped() - before, 2);  // a's end and b's end of the one ring
  }

  // A worker of another host (another key), or one whose socket cannot be reached, is not
  // served: another transport reaches it (tst_routed_transport); sending to it is an error.
  void testOnlyReachableWorkersOfItsHostAreServed() {
    ShmTransport a(1 << 20), b(1 << 20), c(1 << 20);
    std::string unreachable = c.endpoint();
    unreachable.replace(unreachable.find('/', std::strlen(ShmTransport::kScheme)) + 1, std::string::npos,
                        "no-such-socket");
    a.connect({a.endpoint(), otherHost(b.endpoint()), unreachable, ""});
    QVERIFY(a.serves(0));
    QVERIFY(!a.serves(1) && !a.serves(2) && !a.serves(3));
    const std::string s = "nowhere";
    QVERIFY_THROWS_EXCEPTION(Error, a.send(1, {copied(s)}));
  }

  void testAHelloThatIsNotAWorkersIsRefused() {
    QFETCH(int, kind);
    ShmTransport a(1 << 20), b(1 << 20);
    a.connect({a.endpoint(), b.endpoint()});
    b.connect({a.endpoint(), b.endpoint()});
    const int raw = rawUnixConnection(b.endpoint());
    QVERIFY(raw >= 0);
    shm::Region junk = shm::make_region(kind == 4 ? (size_t{64} << 20) + 4096 : 8192);  // sealed, not a ring
    int pipe_fds[2] = {-1, -1};
    QCOMPARE(::pipe(pipe_fds), 0);
    const int blocking = ::eventfd(0, EFD_CLOEXEC), fine_wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    const char* hello = "ddpscope-shm-ring-1";
    if (kind == 0) QVERIFY(shm::send_with_fds(raw, "GET / HTTP/1.1", {}));
    if (kind == 1) QVERIFY(shm::send_with_fds(raw, hello, {junk.fd(), fine_wake, fine_wake}));
    // A same-user process's pipe as the wake-up descriptors: a full one blocked the receive
    // thread, one whose writer closed spun it (issue 68).
    if (kind == 2) QVERIFY(shm::send_with_fds(raw, hello, {junk.fd(), pipe_fds[0], pipe_fds[1]}));
    if (kind == 3) QVERIFY(shm::send_with_fds(raw, hello, {junk.fd(), blocking, blocking}));
    if (kind == 4) QVERIFY(shm::send_with_fds(raw, hello, {junk.fd(), fine_wake, fine_wake}));
    Heard heard;
    QVERIFY(pollUntil(b, heard, [&] { return heard.rejected == 1; }));
    QFETCH(QString, why);
    QVERIFY2(QString::fromStdString(heard.last_rejection).contains(why), heard.last_rejection.c_str());
    for (int fd : {pipe_fds[0], pipe_fds[1], blocking, fine_wake})
      ::close(fd);
    char c;
    QCOMPARE(::read(raw, &c, 1), ssize_t{0});  // dropped
    ::close(raw);
    const std::string fine = "fine";
    a.send(1, {copied(fine)});
    QVERIFY(pollUntil(b, heard, [&] { return heard.messages.size() == 1; }));
    QCOMPARE(text(heard.messages[0].frames[0]), fine);
  }
  void testAHelloThatIsNotAWorkersIsRefused_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("why");
    QTest::newRow("another protocol") << 0 << "a hello that is not a ddpscope worker's";
    QTest::newRow("memory that is not a ring") << 1 << "ring";
    QTest::newRow("wake-ups that are a pipe") << 2 << "not non-blocking eventfds";
    QTest::newRow("blocking eventfds") << 3 << "not non-blocking eventfds";
    QTest::newRow("a ring over 64 MiB") << 4 << "a sealed ring of at most 67108864 bytes";
  }

  // Idle connections to the socket that never say hello hold no read buffer: 400 of them
  // took 64 KiB each (25 MiB) before (issue 68: 8,000 took a worker from 177 to 681 MB).
  void testIdleConnectionsHoldNoReadBuffer() {
    ShmTransport a(1 << 20);
    a.connect({a.endpoint()});
    Heard heard;
    a.poll(std::chrono::milliseconds(10), heard);
    const long before = residentKib();
    std::vector<int> idle;
    for (int i = 0; i < 400; ++i) {
      idle.push_back(rawUnixConnection(a.endpoint()));
      QVERIFY(idle.back() >= 0);
      if (i % 50 == 49) a.poll(std::chrono::milliseconds(1), heard);  // accepted as they come
    }
    for (int i = 0; i < 5; ++i)
      a.poll(std::chrono::milliseconds(5), heard);
    const long grown = residentKib() - before;
    QVERIFY2(grown < 6 * 1024, qPrintable(QString("400 idle connections took %1 KiB").arg(grown)));
    for (int fd : idle)
      ::close(fd);
    a.poll(std::chrono::milliseconds(10), heard);
    QCOMPARE(heard.rejected, 0);  // closing is not misbehaving
  }

  void testAWorkerThatClosesIsLostAndWhatItWroteIsDelivered() {
    ShmTransport a(1 << 20);
    auto b = std::make_unique<ShmTransport>(1 << 20);
    a.connect({a.endpoint(), b->endpoint()});
    b->connect({a.endpoint(), b->endpoint()});
    Heard heard, other;
    QVERIFY(pollBoth(a, heard, *b, other,
                     [&] { return std::count(heard.connected.begin(), heard.connected.end(), 1) > 0; }));
    const std::string last = "last words";
    b->send(0, {copied(last)});
    b->close();
    b.reset();
    QVERIFY2(pollUntil(
                 a, heard,
                 [&] { return std::count(heard.lost.begin(), heard.lost.end(), 1) > 0 && heard.messages.size() == 1; }),
             "worker 1's end closed: reported lost");
    QCOMPARE(text(heard.messages[0].frames[0]), last);
    const std::string s = "to the dead";
    a.send(1, {copied(s)});  // dropped, as the agent has failed its calls: no throw, no hang
  }

  // A worker whose rings always hold bytes (a steady stream from worker 2) still looks at
  // its descriptors: the room worker 1 makes for the rest of a large message, a new ring.
  // It read its rings and went back to the agent before, and the message waited for as
  // long as the stream went on. Alone (poll) and under the routing a job uses (look).
  void testASteadyStreamDoesNotStarveTheRoomForALargeMessage() {
    QFETCH(bool, routed);
    std::vector<std::unique_ptr<Transport>> t;
    for (int i = 0; i < 3; ++i) {
      auto shm = std::make_unique<ShmTransport>(64 << 20, 64 << 10);
      if (!routed) {
        t.push_back(std::move(shm));
        continue;
      }
      std::vector<std::unique_ptr<Transport>> one;
      one.push_back(std::move(shm));
      t.push_back(std::make_unique<RoutedTransport>(std::move(one)));
    }
    Transport &a = *t[0], &b = *t[1], &c = *t[2];
    const std::vector<std::string> all = {a.endpoint(), b.endpoint(), c.endpoint()};
    for (auto& x : t)
      x->connect(all);
    Heard ha, hb, hc;
    const std::string tick = "tick";
    c.send(0, {copied(tick)});
    QVERIFY(pollBoth(a, ha, c, hc, [&] { return ha.messages.size() == 1; }));
    auto big = std::make_shared<std::vector<uint8_t>>(4 << 20, uint8_t{7});
    a.send(1, {{big->data(), big->size(), big}});  // 64 times the ring: written as room is made
    QElapsedTimer timer;
    timer.start();
    size_t ticks = 1;
    while (hb.messages.empty() && timer.elapsed() < 5000) {
      c.send(0, {copied(tick)});  // a's ring from c is never empty when a looks
      ++ticks;
      a.poll(std::chrono::milliseconds(1), ha);
      b.poll(std::chrono::milliseconds(1), hb);
      c.poll(std::chrono::milliseconds(0), hc);
    }
    QVERIFY2(hb.messages.size() == 1,
             qPrintable(QString("the large message did not arrive in 5 s of a steady stream (%1 ticks)").arg(ticks)));
    QCOMPARE(hb.messages[0].frames[0].size, big->size());
  }
  void testASteadyStreamDoesNotStarveTheRoomForALargeMessage_data() {
    QTest::addColumn<bool>("routed");
    QTest::newRow("alone") << false;
    QTest::newRow("routed") << true;
  }

  void testAnotherTransportsEndpointIsNamed() {
    ShmTransport a(1 << 20);
    for (const std::string other : {"tcp://127.0.0.1:5555", "ddptcp://127.0.0.1:5555"}) {
      try {
        a.connect({a.endpoint(), other});
        QFAIL("took another transport's endpoint");
      } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains("worker 1") && QString(e.what()).contains("DDPSCOPE_RPC_TRANSPORT"),
                 e.what());
      }
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestShmTransport)
#include "tst_shm_transport.moc"
