// Bucket advice: gradients packed into buckets as the reducer packs them, the cost of an
// allreduce read off a measured sweep, and the cap it names: never one predicted slower
// than the run's own; the largest of the caps that tie with the fastest when the run's
// own does not.
#include <QtTest/QtTest>

#include "bucket_advice.h"
#include "ddpscope/bucket_rule.h"
#include "test_registry.h"

using ddpscope::probes::best_cap;
using ddpscope::probes::CapPrediction;

namespace {

CapPrediction at(double cap, double ms, double fused_ms, bool recorded = false) {
  CapPrediction p;
  p.cap_mb = cap;
  p.iteration_ms = ms;
  p.fused_iteration_ms = fused_ms;
  p.recorded = recorded;
  return p;
}

}  // namespace

class TestBucketAdvice : public QObject {
  Q_OBJECT
 private slots:
  void testTheRunsOwnCapWhenNothingIsFaster() {
    // The case the app got wrong: 1 MiB ties within 0.5% but predicts slower than 0.1 MiB.
    const std::vector<CapPrediction> p = {at(0.1, 69.6, 69.0, true), at(0.25, 69.65, 69.1), at(1, 69.7, 69.2)};
    QCOMPARE(best_cap(p, false), 0.1);
    QCOMPARE(best_cap(p, true), 0.1);
  }

  void testTheLargestTieWhenTheRunsOwnIsSlower() {
    const std::vector<CapPrediction> p = {at(0.1, 80.0, 80.0, true), at(1, 70.0, 69.0), at(4, 70.2, 68.0),
                                          at(25, 75.0, 70.0)};
    QCOMPARE(best_cap(p, false), 4.0);  // 70.2 is within 0.5% of 70.0: fewer buckets
    QCOMPARE(best_cap(p, true), 4.0);   // 68.0 the fastest
    for (bool fused : {false, true}) {
      const double best = best_cap(p, fused);
      const auto chosen = std::find_if(p.begin(), p.end(), [&](const CapPrediction& c) { return c.cap_mb == best; });
      QVERIFY((fused ? chosen->fused_iteration_ms : chosen->iteration_ms) < 80.0);  // the run's own: 80 ms
    }
  }

  // Bucket advice packs gradients as the reducer does: a bucket closes once it holds at
  // least its cap (the first at the first-bucket cap); the rest goes in a last bucket.
  // The cost read off a measured sweep is linear between sizes, times the training
  // factor.
  void testBucketAdvicePackingAndCost() {
    using ddpscope::pack_buckets;
    QCOMPARE(pack_buckets({4, 4, 4, 4, 4}, {4, 8}), (std::vector<size_t>{0, 2, 4}));
    QCOMPARE(pack_buckets({10, 1, 1, 1}, {4, 100}), (std::vector<size_t>{0, 3}));
    QCOMPARE(pack_buckets({1, 1, 1}, {100, 100}), (std::vector<size_t>{2}));
    QCOMPARE(pack_buckets({}, {1, 1}), (std::vector<size_t>{}));
    ddpscope::probes::AllreduceCost cost;
    cost.measured = {{1000, 1e5}, {5000, 5e5}};
    cost.ns_per_byte = 100;
    cost.training_factor = 1.5;
    QCOMPARE(cost.cost_ns(3000), 3e5 * 1.5);
    QCOMPARE(cost.cost_ns(7000), 7e5 * 1.5);  // beyond the largest: at ns_per_byte
    cost.measured.clear();
    cost.fixed_ns = 50;
    QCOMPARE(cost.cost_ns(10), 50 + 1000.0);  // no sweep: affine
  }
};

DDPSCOPE_TEST_MAIN(TestBucketAdvice)
#include "tst_bucket_advice.moc"
