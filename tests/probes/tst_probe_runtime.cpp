// The probe API and its runtime: spans and instants reach a run file with their
// arguments, thread names and iterations; nothing is recorded while probes are off or
// compiled out; many threads record at once.
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
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;

namespace ddpscope::probes::testing {
int record_with_probes_compiled_out();  // compiled_out_calls.cpp
}

class TestProbeRuntime : public QObject {
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
    QCOMPARE(fw.file, std::string("tests/probes/tst_probe_runtime.cpp"));
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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestProbeRuntime)
#include "tst_probe_runtime.moc"
