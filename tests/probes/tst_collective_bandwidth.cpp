// A bucket's allreduce beside backward (collective_bandwidth.h): `stats` says why a bucket
// whose allreduce ran beside backward is slow, and says nothing of one that did not, of a
// fast one, or of one seen too seldom. (test_bandwidth.py checks the share on real jobs.)
#include <QtTest/QtTest>

#include "run_stats.h"
#include "run_stats_text.h"
#include "scratch_test.h"
#include "slow_cause_run.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;

class TestCollectiveBandwidth : public ScratchTest {
  Q_OBJECT

  // The stats text of the synthetic run with `bucket` standing in for its bandwidth's buckets
  // (the run's own are too small to have a rate read against a reference).
  std::string text_with(const nlohmann::ordered_json& bucket) {
    RunStoreReader run(path("run.ddprun"));
    nlohmann::ordered_json stats = run_stats_json(run);
    stats["bandwidth"]["reference_busbw_gbps"] = 8.0;
    stats["bandwidth"]["by_rank"] = nlohmann::ordered_json::array({{{"rank", 0},
                                                                    {"collectives", 804},
                                                                    {"bytes", 86105344},
                                                                    {"transfer_ms", 938.9},
                                                                    {"busbw_gbps", 0.092},
                                                                    {"median_busbw_gbps", 2.94}}});
    stats["bandwidth"]["by_bucket"] = nlohmann::ordered_json::array({bucket});
    return run_stats_text(stats, true);
  }

 private slots:
  void initTestCase() { testing::write_slow_run(path("run.ddprun"), {.ranks = 2}); }

  void testASlowBucketBesideBackwardIsSaid_data() {
    QTest::addColumn<double>("gbps");
    QTest::addColumn<double>("beside");
    QTest::addColumn<int>("samples");
    QTest::addColumn<bool>("said");
    QTest::newRow("slow, beside backward") << 0.0165 << 0.93 << 400 << true;
    QTest::newRow("slow, after backward") << 0.0165 << 0.2 << 400 << false;
    QTest::newRow("a third of the reference") << 2.7 << 0.93 << 400 << false;
    QTest::newRow("seen 4 times") << 0.0165 << 0.93 << 4 << false;
  }
  void testASlowBucketBesideBackwardIsSaid() {
    QFETCH(double, gbps);
    QFETCH(double, beside);
    QFETCH(int, samples);
    QFETCH(bool, said);
    const std::string text = text_with({{"bucket", 0},
                                        {"bytes", 76704},
                                        {"samples", samples},
                                        {"median_transfer_ms", 4.64},
                                        {"median_busbw_gbps", gbps},
                                        {"median_beside_backward", beside}});
    const std::string sentence =
        "Bucket 0 (75 KiB): 16.5 MB/s in its median allreduce (4.640 ms from the last arrival), 0% of the reference, "
        "93% of that time beside backward's compute: the rate is what the allreduce got of the cores (or GPU) "
        "backward was using, not the link's, and it pulls the overall rates above down.\n";
    QVERIFY2((text.find(sentence) != std::string::npos) == said, text.c_str());
    QVERIFY2((text.find("beside backward's compute") != std::string::npos) == said, text.c_str());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCollectiveBandwidth)
#include "tst_collective_bandwidth.moc"
