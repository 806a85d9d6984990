// Structured records (bucket assignments and parameters, graphs, metrics, ZeRO's
// partition) reach the run file as the engine reported them, NaN kept; with probes off
// nothing is queued.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>

#include "probe_session.h"
#include "records.h"
#include "run_store_reader.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::probes;

class TestRecords : public ScratchTest {
  Q_OBJECT

 private slots:
  void testEveryRecordReachesTheRunFile() {
    const std::string file = path("records.ddprun");
    {
      ProbeSession session({.rank = 0, .run_file = file, .run = {.world_size = 2, .backend = "none", .model = "t"}});
      record_bucket_assignment(0, {{0, 4096 + 128, {1, 0}}},
                               {{0, "fc.weight", {32, 32}, "f32", 0, 0}, {1, "fc.bias", {32}, "f32", 0, 1024}});
      record_graph(-1, 3,
                   {{0, "MseLossBackward", "operation", 0, 5}, {1, "AccumulateGrad(fc.bias)", "accumulate_grad", 1, 0}},
                   {{0, 1, 0}});
      record_metric(3, "loss", 0.25);
      record_metric(4, "loss", std::numeric_limits<double>::quiet_NaN());
      record_zero_partition(2, {{0, "fc.weight", 1024, 0}, {1, "fc.bias", 32, 1}});
      session.finish("finished");
    }
    RunStoreReader run(file);
    const auto buckets = run.buckets(0, 0);
    QCOMPARE(buckets.size(), size_t{1});
    QCOMPARE(buckets[0].params, (std::vector<int64_t>{1, 0}));
    const auto params = run.params(0, 0);
    QCOMPARE(params.size(), size_t{2});
    QCOMPARE(params[1].name, std::string("fc.bias"));
    QCOMPARE(params[1].offset, int64_t{1024});
    const GraphRows g = run.graph(0, -1, 3);
    QCOMPARE(g.nodes.size(), size_t{2});
    QCOMPARE(g.nodes[1].op, std::string("AccumulateGrad(fc.bias)"));
    QCOMPARE(g.edges.size(), size_t{1});
    const auto losses = run.metrics("loss");
    QCOMPARE(losses.size(), size_t{2});
    QCOMPARE(losses[0].value, 0.25);
    QVERIFY(std::isnan(losses[1].value));  // kept, not dropped or turned to 0
    const auto shards = run.zero_shards(0);
    QCOMPARE(shards.size(), size_t{2});
    QCOMPARE(shards[1].owner, 1);
  }

  void testNothingWhileProbesAreOff() {
    record_metric(1, "loss", 1.0);  // no session: nothing queued for a later one
    const std::string file = path("later.ddprun");
    {
      ProbeSession session({.rank = 0, .run_file = file, .run = {.world_size = 1, .backend = "none", .model = "t"}});
      session.finish("finished");
    }
    RunStoreReader run(file);
    QVERIFY(run.metrics().empty());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRecords)
#include "tst_records.moc"
