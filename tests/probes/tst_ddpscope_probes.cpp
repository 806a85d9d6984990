// The probes' C interface (what PyTorch jobs use through ctypes), called from C++ as any
// foreign caller would: outside ddpscope's launcher it records nothing and says so; bad
// calls return -1 with the reason on this thread, never throwing; under a collector (the
// environment the launcher sets) its events, names and records reach the run file.
#include <QtTest/QtTest>

#include "ddpscope_probes.h"
#include "running_collector.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::running_collector;

class TestDdpscopeProbes : public ScratchTest {
  Q_OBJECT

 private slots:
  void testOutsideTheLauncherNothingIsRecorded() {
    qunsetenv("DDPSCOPE_COLLECTOR");
    QCOMPARE(ddpscope_start(0, "cpu"), 0);
    QCOMPARE(ddpscope_enabled(), 0);
    QCOMPARE(ddpscope_stop(), int64_t{-1});  // no session ran
    QCOMPARE(ddpscope_event(ddpscope_kind("forward"), "forward", 1, 2, -1, -1, -1, -1, -1, -1, -1), 0);  // a no-op
  }

  void testBadCallsSayWhy() {
    QVERIFY(ddpscope_kind("forward") >= 0);
    QCOMPARE(ddpscope_kind("no such kind"), -1);
    QCOMPARE(ddpscope_start(-1, "cpu"), -1);
    QVERIFY2(QString(ddpscope_last_error()).contains("negative"), ddpscope_last_error());
    QCOMPARE(ddpscope_record("not json"), -1);
    QVERIFY(std::string(ddpscope_last_error()).size() > 0);
  }

  void testUnderACollectorEventsReachTheRunFile() {
    const std::string file = path("c_api.ddprun");
    {
      RunningCollector c({.run_file = file, .token = "t0k", .run = {.world_size = 1}});
      qputenv("DDPSCOPE_COLLECTOR", QByteArray::fromStdString(c.collector.batch_endpoint()));
      qputenv("DDPSCOPE_COLLECTOR_CLOCK", QByteArray::fromStdString(c.collector.clock_endpoint()));
      qputenv("DDPSCOPE_RUN_TOKEN", "t0k");
      QCOMPARE(ddpscope_start(0, "cpu"), 1);
      QCOMPARE(ddpscope_start(0, "cpu"), -1);  // one session at a time
      QVERIFY(QString(ddpscope_last_error()).contains("already runs"));
      ddpscope_set_thread_name("python main");
      ddpscope_set_iteration(4);
      const int64_t t0 = ddpscope_now_ns();
      QCOMPARE(ddpscope_event(ddpscope_kind("forward"), "forward", t0, t0 + 1000, -1, -1, -1, -1, -1, -1, -1), 0);
      QCOMPARE(ddpscope_event(ddpscope_kind("forward"), "backwards in time", t0, t0 - 1, -1, -1, -1, -1, -1, -1, -1),
               -1);
      QCOMPARE(ddpscope_record(R"({"type":"metric","iteration":4,"name":"loss","value":0.5})"), 0);
      QCOMPARE(ddpscope_stop(), int64_t{0});  // nothing lost
      qunsetenv("DDPSCOPE_COLLECTOR");
      qunsetenv("DDPSCOPE_COLLECTOR_CLOCK");
      qunsetenv("DDPSCOPE_RUN_TOKEN");
      c.join();
    }
    RunStoreReader run(file);
    const auto spans = run.spans();
    QCOMPARE(spans.size(), size_t{1});
    QCOMPARE(spans[0].name, std::string("forward"));
    QCOMPARE(spans[0].iteration, int64_t{4});
    QCOMPARE(run.metrics("loss").size(), size_t{1});
    bool named = false;
    for (const auto& t : run.threads())
      named |= t.name == "python main";
    QVERIFY(named);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestDdpscopeProbes)
#include "tst_ddpscope_probes.moc"
