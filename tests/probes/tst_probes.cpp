// The probe API and its runtime: spans and instants reach a run file with their
// arguments, thread names and iterations; nothing is recorded while probes are off;
// a full buffer drops and counts instead of blocking; many threads record at once; the
// batch codec refuses malformed input; the clock estimator keeps the minimum round trip.
#include <QtTest/QtTest>

#include <limits>

#include <QTemporaryDir>
#include <thread>

#include "clock_offset_estimator.h"
#include "event_batch.h"
#include "probe.h"
#include "probe_session.h"
#include "run_store_reader.h"
#include "thread_buffer.h"

using namespace ddpscope;
using namespace ddpscope::probes;

namespace ddpscope::probes::testing {
int record_with_probes_compiled_out();  // compiled_out_calls.cpp
}

class TestProbes : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString path(const char* name) { return dir_.filePath(name); }

 private slots:
  void testSpansAndInstantsReachTheRunFile() {
    const QString file = path("spans.ddprun");
    {
      ProbeSession session(
          {.rank = 0, .run_file = file.toStdString(), .run = {.world_size = 1, .backend = "none", .model = "test"}});
      set_thread_name("compute");
      set_iteration(7);
      {
        DDPSCOPE_SPAN(span, Kind::Forward, "forward");
        span.args().bytes = 1234;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      DDPSCOPE_INSTANT(Kind::GradReady, "grad_ready", {.param = 3});
      DDPSCOPE_RECORD(Kind::Allreduce, "allreduce", 1000, 5000, {.iteration = 2, .bucket = 1, .bytes = 64, .id = 9});
      session.finish("finished");
    }
    RunStoreReader run(file.toStdString());
    QCOMPARE(run.run().status, std::string("finished"));
    const auto spans = run.spans();
    QCOMPARE(spans.size(), size_t(3));
    const SpanRow& ar = spans[0];  // ordered by begin time: the explicit 1000 ns first
    QCOMPARE(ar.kind, Kind::Allreduce);
    QCOMPARE(ar.t_begin_ns, int64_t(1000));
    QCOMPARE(ar.t_end_ns, int64_t(5000));
    QCOMPARE(ar.iteration, int64_t(2));
    QCOMPARE(ar.bucket, int64_t(1));
    QCOMPARE(ar.bytes, int64_t(64));
    QCOMPARE(ar.seq, int64_t(9));
    const SpanRow& fw = spans[1];
    QCOMPARE(fw.kind, Kind::Forward);
    QCOMPARE(fw.name, std::string("forward"));
    QCOMPARE(fw.iteration, int64_t(7));  // the current iteration
    QCOMPARE(fw.bytes, int64_t(1234));
    // The call site, relative to the source tree.
    QCOMPARE(fw.file, std::string("tests/probes/tst_probes.cpp"));
    QVERIFY(fw.line > 0);
    QVERIFY(fw.t_end_ns - fw.t_begin_ns >= 2'000'000);
    const SpanRow& gr = spans[2];
    QCOMPARE(gr.kind, Kind::GradReady);
    QCOMPARE(gr.t_begin_ns, gr.t_end_ns);
    QCOMPARE(gr.param, int64_t(3));
    QVERIFY(gr.t_begin_ns >= fw.t_end_ns);
    QCOMPARE(gr.bucket, int64_t(-1));  // unset stays unset
    const auto threads = run.threads();
    QVERIFY(std::any_of(threads.begin(), threads.end(),
                        [&](const ThreadRow& t) { return t.thread == fw.thread && t.name == "compute"; }));
    const auto ranks = run.ranks();
    QCOMPARE(ranks.size(), size_t(1));
    QCOMPARE(ranks[0].events_received, int64_t(3));
    QCOMPARE(ranks[0].pid, int64_t(getpid()));
  }

  void testTickTimesMatchTheMonotonicClock() {
    // Spans read the time-stamp counter; shipped times must be CLOCK_MONOTONIC.
    const QString file = path("ticks.ddprun");
    std::vector<std::pair<int64_t, int64_t>> windows;
    {
      ProbeSession session({.rank = 0, .run_file = file.toStdString()});
      for (int i = 0; i < 20; ++i) {
        const int64_t before = now_ns();
        DDPSCOPE_INSTANT(Kind::Mark, "tick", {.param = i});
        windows.emplace_back(before, now_ns());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    RunStoreReader run(file.toStdString());
    const auto spans = run.spans();
    QCOMPARE(spans.size(), size_t(20));
    for (const SpanRow& s : spans) {
      const auto [before, after] = windows[static_cast<size_t>(s.param)];
      // Within the reads around it, give or take a few microseconds of conversion error.
      QVERIFY2(s.t_begin_ns >= before - 5000 && s.t_begin_ns <= after + 5000,
               qPrintable(
                   QString("instant %1 at %2, window [%3, %4]").arg(s.param).arg(s.t_begin_ns).arg(before).arg(after)));
    }
  }

  void testNothingIsRecordedWhileOff() {
    QVERIFY(!enabled());
    DDPSCOPE_INSTANT(Kind::Mark, "before");  // no session: off
    const QString file = path("off.ddprun");
    {
      ProbeSession session({.rank = 0, .run_file = file.toStdString()});
      QVERIFY(enabled());
      DDPSCOPE_INSTANT(Kind::Mark, "during");
      set_enabled(false);
      DDPSCOPE_INSTANT(Kind::Mark, "switched off");
      set_enabled(true);
    }
    QVERIFY(!enabled());
    DDPSCOPE_INSTANT(Kind::Mark, "after");
    RunStoreReader run(file.toStdString());
    const auto spans = run.spans();
    QCOMPARE(spans.size(), size_t(1));
    QCOMPARE(spans[0].name, std::string("during"));
  }

  void testCompiledOutProbesRecordNothing() {
    const QString file = path("compiled-out.ddprun");
    {
      ProbeSession session({.rank = 0, .run_file = file.toStdString()});
      QCOMPARE(testing::record_with_probes_compiled_out(), 1);
      DDPSCOPE_INSTANT(Kind::Mark, "compiled_in");  // this file has them compiled in
    }
    RunStoreReader run(file.toStdString());
    const auto spans = run.spans();
    QCOMPARE(spans.size(), size_t(1));
    QCOMPARE(spans[0].name, std::string("compiled_in"));
  }

  void testFullBufferDropsAndCounts() {
    const QString file = path("overflow.ddprun");
    const uint64_t extra = 1000;
    {
      // The shipper would wake only after an hour: the buffer fills and must drop.
      ProbeSession session({.rank = 0, .run_file = file.toStdString(), .interval = std::chrono::hours(1)});
      std::thread producer([&] {
        for (uint64_t i = 0; i < ThreadBuffer::kCapacity + extra; ++i)
          DDPSCOPE_RECORD(Kind::Mark, "m", static_cast<int64_t>(i), static_cast<int64_t>(i));
      });
      producer.join();
      QCOMPARE(session.dropped(), extra);
      session.finish("finished");
    }
    RunStoreReader run(file.toStdString());
    QCOMPARE(run.span_count(), int64_t(ThreadBuffer::kCapacity));
    QCOMPARE(run.ranks()[0].events_dropped, int64_t(extra));
    // The events kept are the first ones, in order.
    const auto last = run.spans({.t_begin_ns = int64_t(ThreadBuffer::kCapacity) - 1});
    QCOMPARE(last.size(), size_t(1));
  }

  void testManyThreadsRecordAtOnce() {
    const QString file = path("threads.ddprun");
    constexpr int kThreads = 4, kEach = 20000;
    {
      ProbeSession session({.rank = 0, .run_file = file.toStdString(), .interval = std::chrono::milliseconds(5)});
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([t] {
          set_thread_name("worker " + std::to_string(t));
          for (int i = 0; i < kEach; ++i)
            DDPSCOPE_RECORD(Kind::Mark, "tick", i, i, {.param = t});
        });
      }
      for (auto& t : threads)
        t.join();
      session.finish("finished");
      QCOMPARE(session.dropped(), uint64_t(0));
    }
    RunStoreReader run(file.toStdString());
    QCOMPARE(run.span_count(), int64_t(kThreads * kEach));
    // Each thread's events are on its own track, complete.
    std::map<int, int> per_thread;
    for (const SpanRow& s : run.spans())
      ++per_thread[s.thread];
    QCOMPARE(int(per_thread.size()), kThreads);
    for (auto [thread, n] : per_thread)
      QCOMPARE(n, kEach);
  }

  void testBatchCodecRoundTripAndMalformedInput() {
    EventBatch b;
    b.rank = 3;
    b.sequence = 42;
    b.dropped_total = 5;
    b.clock_offset_ns = -77;
    b.threads = {{1, 1234, "compute"}};
    b.names = {"forward", "allreduce"};
    b.events.push_back(BatchEvent{10, 20, 30, 40, 50, 60, 70, 1, 8, 9, 1, 2, 0});
    b.records = {R"({"type":"metric"})"};
    const std::string bytes = encode(b);
    const EventBatch d = decode(bytes.data(), bytes.size());
    QCOMPARE(d.rank, 3);
    QCOMPARE(d.sequence, uint64_t(42));
    QCOMPARE(d.clock_offset_ns, int64_t(-77));
    QCOMPARE(d.threads.at(0).name, std::string("compute"));
    QCOMPARE(d.names.at(1), std::string("allreduce"));
    QCOMPARE(d.events.at(0).t_end_ns, int64_t(20));
    QCOMPARE(d.events.at(0).name, uint32_t(1));
    QCOMPARE(d.records.at(0), b.records[0]);
    // Every truncation is refused with a message, never read past the end.
    for (size_t n = 0; n < bytes.size(); n += 7) {
      QVERIFY_THROWS_EXCEPTION(Error, decode(bytes.data(), n));
    }
    std::string bad = bytes;
    bad[0] ^= 0x55;
    QVERIFY_THROWS_EXCEPTION(Error, decode(bad.data(), bad.size()));
    // A name index past the name table.
    EventBatch c = b;
    c.events[0].name = 7;
    const std::string cb = encode(c);
    QVERIFY_THROWS_EXCEPTION(Error, decode(cb.data(), cb.size()));
  }

  void testClockEstimatorKeepsMinimumRoundTrip() {
    ClockOffsetEstimator e;
    QVERIFY(!e.best());
    // True offset +1000: the collector reads t + 1000. Delays differ per sample.
    e.add(0, 0 + 300 + 1000, 400);         // rtt 400, asymmetric: estimate 1100
    e.add(10'000, 10'020 + 1000, 10'040);  // rtt 40: estimate 1000
    e.add(20'000, 20'500 + 1000, 20'600);  // rtt 600
    e.add(30'000, 0, 29'000);              // t1 < t0: ignored
    // A collector time no clock reads (off the wire) would overflow: dropped.
    e.add(40'000, std::numeric_limits<int64_t>::min(), 40'001);
    e.add(std::numeric_limits<int64_t>::min(), 0, 1);
    QVERIFY(e.best());
    QCOMPARE(e.best()->rtt_ns, int64_t(40));
    QCOMPARE(e.best()->offset_ns, int64_t(1000));
  }

  void testOnlyOneSessionAtATime() {
    ProbeSession a({.rank = 0, .run_file = path("one.ddprun").toStdString()});
    QVERIFY_THROWS_EXCEPTION(Error, ProbeSession({.rank = 0, .run_file = path("two.ddprun").toStdString()}));
  }
};

QTEST_GUILESS_MAIN(TestProbes)
#include "tst_probes.moc"
