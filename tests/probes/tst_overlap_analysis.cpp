// The overlap analysis: interval arithmetic, and every figure of an iteration whose
// times are known (hidden and exposed communication, the stats JSON).
#include <QtTest/QtTest>

#include "known_runs.h"
#include "scratch_test.h"
#include <nlohmann/json.hpp>
#include "overlap_analysis.h"
#include "run_stats.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

class TestOverlapAnalysis : public ScratchTest {
  Q_OBJECT

 private slots:

  void testIntervalArithmetic() {
    const auto m = merge_intervals({{5, 10}, {0, 3}, {2, 4}, {10, 12}, {20, 20}});
    QCOMPARE(m.size(), size_t(2));
    QCOMPARE(m[0].begin, int64_t(0));
    QCOMPARE(m[0].end, int64_t(4));
    QCOMPARE(m[1].end, int64_t(12));
    QCOMPARE(total_length(m), int64_t(11));
    const auto d = subtract_intervals({{0, 10}, {20, 30}}, {{2, 4}, {8, 22}, {25, 26}});
    QCOMPARE(total_length(d), int64_t(2 + 4 + 3 + 4));  // [0,2] [4,8] [22,25] [26,30]
    QCOMPARE(d.size(), size_t(4));
  }

  void testOverlapAnalysisOfKnownIteration() {
    const std::string file = path("overlap.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      w.write(known_iteration(0));
    }
    RunStoreReader r(file);
    const RunAnalysis a = analyze_run(r);
    QCOMPARE(a.iterations.size(), size_t(1));
    const IterationAnalysis& it = a.iterations[0];
    QCOMPARE(it.iteration_ms, 1000e-6);
    QCOMPARE(it.forward_ms, 200e-6);
    QCOMPARE(it.backward_ms, 500e-6);     // 600 minus the 100 of finalize
    QCOMPARE(it.comm_ms, 310e-6);         // 200 + 110
    QCOMPARE(it.exposed_comm_ms, 60e-6);  // bucket 1 from 700 to 760
    QCOMPARE(it.exposed.size(), size_t(1));
    QCOMPARE(it.exposed[0].begin, int64_t(700));
    QCOMPARE(it.exposed[0].end, int64_t(760));
    QVERIFY(std::fabs(it.overlap_ratio - (1 - 60.0 / 310.0)) < 1e-12);
    QCOMPARE(a.buckets.size(), size_t(2));
    QCOMPARE(a.buckets[1].bucket, 1);
    QCOMPARE(a.buckets[1].ready_ns, int64_t(640));
    QCOMPARE(a.buckets[1].bytes, int64_t(8192));
    QCOMPARE(a.buckets[1].wait_ms, 60e-6);
    QCOMPARE(a.buckets[0].wait_ms, 0.0);
    const nlohmann::json stats = nlohmann::json::parse(run_stats_json(r).dump());
    QCOMPARE(stats["iterations"].size(), size_t(1));
    QCOMPARE(stats["iterations"][0]["exposed_comm_ms"].get<double>(), 60e-6);
    QCOMPARE(stats["buckets"].size(), size_t(2));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestOverlapAnalysis)
#include "tst_overlap_analysis.moc"
