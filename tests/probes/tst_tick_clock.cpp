// The tick clock: tick times converted to nanoseconds match the monotonic clock.
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

class TestTickClock : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString path(const char* name) { return dir_.filePath(name); }

 private slots:

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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTickClock)
#include "tst_tick_clock.moc"
