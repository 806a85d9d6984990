// The collector over real ZeroMQ sockets (loopback) in one process: batches with the
// run's token are stored, others rejected and counted; what a token holder claims is
// checked (ranks, times, ends of ranks that never joined); clock offsets measured against
// it are near zero on one host, and an injected offset is recovered and applied.
#include <QtTest/QtTest>

#include "run_stats.h"
#include "run_stats_text.h"
#include "running_collector.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::running_collector;

class TestCollector : public ScratchTest {
  Q_OBJECT

 private slots:

  void testBatchesWithTheTokenAreStored() {
    const std::string file = path("token.ddprun");
    {
      RunningCollector c({.run_file = file, .token = "secret", .run = {.world_size = 2}});
      CollectorSink good({.batch_endpoint = c.collector.batch_endpoint(),
                          .clock_endpoint = c.collector.clock_endpoint(),
                          .token = "secret"});
      CollectorSink bad({.batch_endpoint = c.collector.batch_endpoint(),
                         .clock_endpoint = c.collector.clock_endpoint(),
                         .token = "guess"});
      for (int i = 0; i < 10; ++i) {
        QVERIFY(good.write(batch_of(i % 2, 1000, i * 100000)));
        QVERIFY(bad.write(batch_of(5, 7, 0)));
      }
      // Committed batches are acknowledged; rejected ones never are.
      good.settle(std::chrono::seconds(10));
      QCOMPARE(good.confirmed_events(), uint64_t(10000));
      bad.settle(std::chrono::milliseconds(200));
      QCOMPARE(bad.confirmed_events(), uint64_t(0));
      // The wrong token gets no clock answers either.
      QVERIFY(!bad.measure_clock());
      QThread::msleep(300);
      c.join();
      QCOMPARE(c.collector.rejected(), uint64_t(10));
      QCOMPARE(c.collector.batches(), uint64_t(10));
    }
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t(10000));
    QCOMPARE(r.run().rejected_batches, int64_t(10));
    QCOMPARE(r.run().status, std::string("finished"));
    QCOMPARE(r.ranks().size(), size_t(2));  // rank 5 never got in
    QCOMPARE(r.integrity_check(), std::string("ok"));
  }

  // What a holder of the run's token claims is checked before it is stored (issue 68):
  // a rank no job has is refused; spans that end before they begin, or whose times the
  // rank's clock offset would overflow, are left out of their batch (the rest is stored);
  // an end claimed for a rank that never joined does not count towards `--expect`.
  void testWhatATokenHolderClaimsIsChecked() {
    const std::string file = path("claims.ddprun");
    {
      RunningCollector c({.run_file = file, .token = "secret", .run = {.world_size = 2}});
      CollectorSink sink({.batch_endpoint = c.collector.batch_endpoint(),
                          .clock_endpoint = c.collector.clock_endpoint(),
                          .token = "secret"});
      QVERIFY(sink.write(batch_of(-3, 5, 0)));
      QVERIFY(sink.write(batch_of(1 << 20, 5, 0)));
      EventBatch mixed = batch_of(0, 10, 1000);
      mixed.events[2].t_end_ns = mixed.events[2].t_begin_ns - 1;  // ends before it begins
      mixed.events[5].t_end_ns = 0;
      mixed.events[7].t_begin_ns = std::numeric_limits<int64_t>::max() - 5;  // overflows with the offset
      mixed.events[7].t_end_ns = std::numeric_limits<int64_t>::max();
      mixed.clock_offset_ns = 100;
      QVERIFY(sink.write(mixed));
      const std::string end = R"({"type":"rank_end","restart":0,"max_restarts":0,"failed":false})";
      EventBatch stranger;  // rank 1's end, from nobody that joined as rank 1
      stranger.rank = 1;
      stranger.records = {end};
      QVERIFY(sink.write(stranger));
      EventBatch ended;  // rank 0 joined above: its end counts
      ended.rank = 0;
      ended.records = {end};
      QVERIFY(sink.write(ended));
      sink.settle(std::chrono::seconds(10));
      QThread::msleep(300);
      c.join();
      QCOMPARE(c.collector.rejected(), uint64_t(2));
      QCOMPARE(c.collector.events_refused(), uint64_t(3));
      QCOMPARE(c.collector.ranks_ended(), (std::set<int>{0}));
    }
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t(7));
    QCOMPARE(r.run().rejected_batches, int64_t(2));
    QCOMPARE(r.integrity_check(), std::string("ok"));
    const nlohmann::ordered_json stats = run_stats_json(r);  // what stats and the Summary say
    QCOMPARE(stats["rejected"]["collector_events"].get<int64_t>(), int64_t(3));
    const std::string text = run_stats_text(stats, true);
    QVERIFY2(text.find("3 events that ended before they began") != std::string::npos, text.c_str());
  }

  void testClockOffsetOnOneHostIsNearZero() {
    RunningCollector c({.run_file = path("clock.ddprun"), .token = "t"});
    CollectorSink sink(
        {.batch_endpoint = c.collector.batch_endpoint(), .clock_endpoint = c.collector.clock_endpoint(), .token = "t"});
    QVERIFY(sink.measure_clock());
    // Same machine, same clock: only the measurement error remains (half a round trip).
    QVERIFY2(std::llabs(sink.clock_offset_ns()) < 2'000'000,
             qPrintable(QString("offset %1 ns").arg(sink.clock_offset_ns())));
  }

  void testInjectedOffsetIsRecoveredAndApplied() {
    const std::string file = path("skew.ddprun");
    const int64_t skew = 5'000'000'000;  // this "rank" runs 5 s ahead
    const int64_t before = now_ns();
    {
      RunningCollector c({.run_file = file, .token = "t"});
      CollectorSink sink({.batch_endpoint = c.collector.batch_endpoint(),
                          .clock_endpoint = c.collector.clock_endpoint(),
                          .token = "t",
                          .clock_skew_ns = skew});
      QVERIFY(std::llabs(sink.clock_offset_ns() + skew) < 2'000'000);
      // An event stamped on the skewed clock, shipped with the measured offset.
      EventBatch b = batch_of(0, 1, sink.local_now_ns());
      b.clock_offset_ns = sink.clock_offset_ns();
      QVERIFY(sink.write(b));
      QThread::msleep(200);
    }
    const int64_t after = now_ns();
    RunStoreReader r(file);
    const auto spans = r.spans();
    QCOMPARE(spans.size(), size_t(1));
    // On the collector's axis the event lies within the test's own time window.
    QVERIFY2(spans[0].t_begin_ns >= before - 2'000'000 && spans[0].t_begin_ns <= after + 2'000'000,
             qPrintable(QString("event at %1, window [%2, %3]").arg(spans[0].t_begin_ns).arg(before).arg(after)));
  }

  // Given a port, batches come to it and clock pings to the next (a firewall's two holes).
  void testAFixedPortAndTheNext() {
    const std::string file = path("port.ddprun");
    // A free loopback port (0: none) whose next one is free too: bound, then let go.
    const auto bindable = [](int want) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(want));
      socklen_t len = sizeof a;
      int got = 0;
      if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
          getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        got = ntohs(a.sin_port);
      close(fd);
      return got;
    };
    int port = 0;
    for (int tries = 0; tries < 20 && !port; ++tries) {
      const int p = bindable(0);
      if (p > 0 && p < 65534 && bindable(p + 1) == p + 1) port = p;
    }
    QVERIFY(port > 0);
    RunningCollector c({.run_file = file, .token = "t", .run = {.world_size = 1}, .port = port});
    QCOMPARE(c.collector.batch_endpoint(), "tcp://127.0.0.1:" + std::to_string(port));
    QCOMPARE(c.collector.clock_endpoint(), "tcp://127.0.0.1:" + std::to_string(port + 1));
    try {
      Collector second({.run_file = path("port2.ddprun"), .token = "t", .run = {.world_size = 1}, .port = port});
      QFAIL("two collectors on one port");
    } catch (const ddpscope::Error& e) {
      QVERIFY2(QString(e.what()).contains(QString("ports %1 and %2").arg(port).arg(port + 1)), e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCollector)
#include "tst_collector.moc"
