// What every RPC transport promises its agent (transport.h), checked on each of the three
// (shared memory, TCP, ZeroMQ) and on the default, shared memory and TCP routed together
// (routed_transport.h), by the same cases, two ends in one process or one forked:
// frames arrive whole and in order (empty ones, a large one sent from its owner's bytes,
// one to itself); messages from several threads at once arrive whole, each thread's in its
// order; a message far larger than any buffer, sent while nobody reads, returns at once and
// arrives whole with later ones behind it; a message of more frames than any has is
// refused and the next arrives; a worker that closes, or is killed mid-send or
// mid-receive, is reported lost, nothing partial is delivered, and sends to it neither
// block nor throw; a closed transport refuses to send. What one transport alone does (a
// stranger on TCP, a hello on the shared-memory socket, ZeroMQ's handshake) is tested
// beside it: tst_tcp_transport, tst_shm_transport, tst_zmq_transport.
#include <QtTest/QtTest>

#include <sys/wait.h>
#include <unistd.h>

#include <QElapsedTimer>
#include <csignal>
#include <memory>
#include <thread>

#include "ddpscope/error.h"
#include "rpc/routed_transport.h"
#include "rpc/shm_transport.h"
#include "rpc/tcp_transport.h"
#include "rpc/zmq_transport.h"
#include "test_registry.h"
#include "transport_test_events.h"

using namespace ddpscope;
using namespace ddpscope::rpc;
using namespace ddpscope::rpc::testing;

namespace {

// A transport of `kind` on loopback taking messages up to `max_message` bytes; shared
// memory's rings of `ring_bytes` (0: its default), small to make a message wrap many times.
std::unique_ptr<Transport> makeTransport(const QString& kind, int64_t max_message, size_t ring_bytes = 0) {
  const size_t ring = ring_bytes > 0 ? ring_bytes : ShmTransport::kDefaultRingBytes;
  if (kind == "shm") return std::make_unique<ShmTransport>(max_message, ring);
  if (kind == "tcp") return std::make_unique<TcpTransport>("127.0.0.1", max_message);
  if (kind == "zmq") return std::make_unique<ZmqTransport>("127.0.0.1", max_message);
  std::vector<std::unique_ptr<Transport>> routes;  // "routed": what jobs use
  routes.push_back(std::make_unique<ShmTransport>(max_message, ring));
  routes.push_back(std::make_unique<TcpTransport>("127.0.0.1", max_message));
  return std::make_unique<RoutedTransport>(std::move(routes));
}

// Two workers of `kind`, connected to each other: worker 0 and worker 1.
struct Pair {
  std::unique_ptr<Transport> a, b;
  Pair(const QString& kind, int64_t max_message, size_t ring_bytes = 0)
      : a(makeTransport(kind, max_message, ring_bytes)), b(makeTransport(kind, max_message, ring_bytes)) {
    a->connect({a->endpoint(), b->endpoint()});
    b->connect({a->endpoint(), b->endpoint()});
  }
};

void everyTransport() {
  QTest::addColumn<QString>("kind");
  for (const char* kind : {"shm", "tcp", "zmq", "routed"})
    QTest::newRow(kind) << QString(kind);
}

}  // namespace

class TestTransportConformance : public QObject {
  Q_OBJECT

 private slots:
  void testFramesArriveWholeAndInOrder() {
    QFETCH(QString, kind);
    Pair p(kind, 1 << 24, 4096);  // 300 KB through a 4 KiB ring: 73 rings' worth
    const std::string one = "first", two = "second frame", empty;
    for (int i = 0; i < 3; ++i)
      p.a->send(1, {copied(one), copied(two + std::to_string(i)), copied(empty)});
    auto big = std::make_shared<std::string>(300000, 'x');  // from its owner's bytes
    for (size_t i = 0; i < big->size(); ++i)
      (*big)[i] = static_cast<char>('a' + i % 23);
    p.a->send(1, {{big->data(), big->size(), big}});
    p.a->send(1, {copied(one)});
    p.a->send(0, {copied(two)});  // to itself
    Heard heard, self;
    QVERIFY(pollBoth(*p.a, self, *p.b, heard, [&] { return heard.messages.size() == 5 && self.messages.size() == 1; }));
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(heard.messages[i].frames.size(), size_t{3});
      QCOMPARE(text(heard.messages[i].frames[0]), one);
      QCOMPARE(text(heard.messages[i].frames[1]), two + std::to_string(i));
      QCOMPARE(heard.messages[i].frames[2].size, size_t{0});
    }
    QVERIFY(text(heard.messages[3].frames[0]) == *big);
    QCOMPARE(text(heard.messages[4].frames[0]), one);
    QCOMPARE(text(self.messages[0].frames[0]), two);
    QCOMPARE(heard.rejected, 0);
  }
  void testFramesArriveWholeAndInOrder_data() { everyTransport(); }

  // Four threads send at once: every message arrives whole, and each thread's in its order.
  void testSendersOnSeveralThreadsKeepTheirMessagesWhole() {
    QFETCH(QString, kind);
    Pair p(kind, 1 << 20, 8192);  // the threads contend for one small ring
    constexpr int kThreads = 4, kEach = 300;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&p, t] {
        for (int i = 0; i < kEach; ++i) {
          const std::string tag = std::to_string(t) + ":" + std::to_string(i);
          const std::string pad(static_cast<size_t>(100 + (i * 37) % 3000), char('A' + t));
          p.a->send(1, {copied(tag), copied(pad)});
        }
      });
    Heard heard, sender;
    const bool all = pollBoth(*p.a, sender, *p.b, heard, [&] { return heard.messages.size() == kThreads * kEach; });
    for (auto& t : threads)
      t.join();
    QVERIFY2(all, qPrintable(QString("%1 of %2 arrived").arg(heard.messages.size()).arg(kThreads * kEach)));
    std::vector<int> next(kThreads, 0);
    for (const auto& m : heard.messages) {
      QCOMPARE(m.frames.size(), size_t{2});
      const std::string tag = text(m.frames[0]);
      const int t = std::stoi(tag.substr(0, tag.find(':'))), i = std::stoi(tag.substr(tag.find(':') + 1));
      QCOMPARE(i, next[t]++);
      QCOMPARE(m.frames[1].size, static_cast<size_t>(100 + (i * 37) % 3000));
      QVERIFY(
          std::all_of(m.frames[1].data, m.frames[1].data + m.frames[1].size, [t](uint8_t c) { return c == 'A' + t; }));
    }
  }
  void testSendersOnSeveralThreadsKeepTheirMessagesWhole_data() { everyTransport(); }

  // 64 MiB sent while the receiver does not read: the send returns, the rest waits, and a
  // message after it keeps its place.
  void testALargeMessageWaitsItsTurnWithoutBlockingTheSender() {
    QFETCH(QString, kind);
    Pair p(kind, int64_t{1} << 30);
    checkALargeMessageWaitsItsTurn(*p.a, *p.b);
  }
  void testALargeMessageWaitsItsTurnWithoutBlockingTheSender_data() { everyTransport(); }

  // More frames than any message has: refused (by the sender or the receiver), and the
  // message after it arrives.
  void testAMessageOfTooManyFramesIsRefused() {
    QFETCH(QString, kind);
    Pair p(kind, 1 << 20);
    const std::string s = "f";
    bool refused_by_sender = false;
    try {
      p.a->send(1, std::vector<OutgoingFrame>(wire::kMaxTensors + 4, copied(s)));
    } catch (const Error&) {
      refused_by_sender = true;
    }
    p.a->send(1, {copied(s)});
    Heard heard, sender;
    QVERIFY(pollBoth(*p.a, sender, *p.b, heard,
                     [&] { return heard.messages.size() == 1 && (refused_by_sender || heard.rejected == 1); }));
    QCOMPARE(heard.messages[0].frames.size(), size_t{1});
  }
  void testAMessageOfTooManyFramesIsRefused_data() { everyTransport(); }

  // A worker that closes is reported lost (what it sent and was delivered stays so; what
  // still waited in its queue may be dropped: ZeroMQ drops it, shared memory has written it,
  // tst_shm_transport); a send to it is dropped without a throw or a wait.
  void testAWorkerThatClosesIsLost() {
    QFETCH(QString, kind);
    Pair p(kind, 1 << 20);
    Heard heard, other;
    QVERIFY(pollBoth(*p.a, heard, *p.b, other,
                     [&] { return std::count(heard.connected.begin(), heard.connected.end(), 1) > 0; }));
    const std::string last = "last words";
    p.b->send(0, {copied(last)});
    QVERIFY(pollBoth(*p.a, heard, *p.b, other, [&] { return heard.messages.size() == 1; }));
    p.b->close();
    p.b.reset();
    QVERIFY2(pollUntil(*p.a, heard, [&] { return std::count(heard.lost.begin(), heard.lost.end(), 1) > 0; }),
             "worker 1's end closed: reported lost");
    QCOMPARE(text(heard.messages[0].frames[0]), last);
    const std::string s = "to the dead";
    QElapsedTimer timer;
    timer.start();
    p.a->send(1, {copied(s)});
    QVERIFY(timer.elapsed() < 1000);
  }
  void testAWorkerThatClosesIsLost_data() { everyTransport(); }

  // Another process, killed while its 64 MiB message is on its way (mid-send) or while it
  // reads ours (mid-receive): nothing partial is delivered, the worker is reported lost,
  // and sends to it neither block nor throw.
  void testAWorkerKilledMidSendOrMidReceive() {
    QFETCH(QString, kind);
    QFETCH(bool, killed_while_sending);
    auto a = makeTransport(kind, int64_t{1} << 30);
    int to_child[2], from_child[2];
    QVERIFY(::pipe(to_child) == 0 && ::pipe(from_child) == 0);
    const pid_t child = ::fork();
    if (child == 0) {
      auto c = makeTransport(kind, int64_t{1} << 30);
      const std::string mine = c->endpoint() + "\n";
      [[maybe_unused]] ssize_t w = ::write(from_child[1], mine.data(), mine.size());
      char theirs[512] = {};
      [[maybe_unused]] ssize_t r = ::read(to_child[0], theirs, sizeof(theirs) - 1);
      c->connect({std::string(theirs), c->endpoint()});
      Heard heard;
      if (killed_while_sending) {
        auto big = std::make_shared<std::vector<uint8_t>>(64 << 20, 7);
        c->send(0, {{big->data(), big->size(), big}});
        for (int i = 0; i < 20; ++i)  // some of it on its way
          c->poll(std::chrono::milliseconds(1), heard);
        w = ::write(from_child[1], "s", 1);
        for (;;)
          c->poll(std::chrono::milliseconds(1), heard);
      }
      for (;;)
        c->poll(std::chrono::milliseconds(1), heard);  // reads until it is killed
    }
    char line[512] = {};
    QVERIFY(::read(from_child[0], line, sizeof(line) - 1) > 0);
    const std::string theirs = std::string(line).substr(0, std::string(line).find('\n'));
    QVERIFY(::write(to_child[1], a->endpoint().data(), a->endpoint().size()) > 0);
    a->connect({a->endpoint(), theirs});
    auto big = std::make_shared<std::vector<uint8_t>>(64 << 20, 9);
    Heard heard;
    if (killed_while_sending) {
      char sent;
      QCOMPARE(::read(from_child[0], &sent, 1), ssize_t{1});
      for (int i = 0; i < 5; ++i)  // take some of it
        a->poll(std::chrono::milliseconds(1), heard);
    } else {
      a->send(1, {{big->data(), big->size(), big}});
      for (int i = 0; i < 20; ++i)  // the child reads some of it meanwhile
        a->poll(std::chrono::milliseconds(1), heard);
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    QVERIFY(pollUntil(*a, heard, [&] { return std::count(heard.lost.begin(), heard.lost.end(), 1) > 0; }));
    for (int i = 0; i < 20; ++i)
      a->poll(std::chrono::milliseconds(1), heard);
    for (const auto& m : heard.messages) {  // whole or not at all
      QCOMPARE(m.frames.size(), size_t{1});
      QCOMPARE(m.frames[0].size, big->size());
    }
    QVERIFY(heard.messages.size() <= (killed_while_sending ? 1u : 0u));
    QCOMPARE(heard.rejected, 0);
    QElapsedTimer timer;
    timer.start();
    a->send(1, {{big->data(), big->size(), big}});  // to the dead: dropped at once
    QVERIFY(timer.elapsed() < 1000);
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]})
      ::close(fd);
  }
  void testAWorkerKilledMidSendOrMidReceive_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<bool>("killed_while_sending");
    for (const char* kind : {"shm", "tcp", "zmq", "routed"}) {
      QTest::addRow("%s mid-send", kind) << QString(kind) << true;
      QTest::addRow("%s mid-receive", kind) << QString(kind) << false;
    }
  }

  void testAClosedTransportRefusesToSend() {
    QFETCH(QString, kind);
    auto a = makeTransport(kind, 1 << 20);
    a->connect({a->endpoint()});
    a->close();
    a->close();  // idempotent
    const std::string s = "late";
    QVERIFY_THROWS_EXCEPTION(Error, a->send(0, {copied(s)}));
  }
  void testAClosedTransportRefusesToSend_data() { everyTransport(); }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTransportConformance)
#include "tst_transport_conformance.moc"
