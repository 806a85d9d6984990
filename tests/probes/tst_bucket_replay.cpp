// One iteration replayed at a cap: backward's compute and the allreduces slow each other
// while both run (they share the cores), so a cap that starts its allreduces later gets
// a shorter backward than the recording had, and a recording's stretched gaps are taken
// back to the compute's own length before the replay.
#include <QtTest/QtTest>

#include "bucket_replay.h"
#include "test_registry.h"

using ddpscope::probes::AllreduceCost;
using ddpscope::probes::IterationInputs;
using ddpscope::probes::set_compute_work;
using ddpscope::probes::simulate;

namespace {

constexpr double kMs = 1e6;
constexpr int64_t kMiB = 1 << 20;

// Four 1 MiB gradients, one every 10 ms of backward, compute done 2 ms after the last;
// no forward, write-back or optimizer, so an iteration is backward and its allreduces.
IterationInputs four_layers() {
  IterationInputs in;
  for (int i = 1; i <= 4; ++i)
    in.ready.push_back({kMiB, 10 * i * kMs, 10 * i * kMs, 0});
  in.compute_end = 42 * kMs;
  return in;
}

// 8 ms per 1 MiB allreduce, whatever runs beside it unless set.
AllreduceCost eight_ms_per_mib() {
  AllreduceCost cost;
  cost.fixed_ns = 0;
  cost.ns_per_byte = 8 * kMs / kMiB;
  return cost;
}

}  // namespace

class TestBucketReplay : public QObject {
  Q_OBJECT
 private slots:
  void testNothingSharedReplaysTheRecordedTimes() {
    IterationInputs in = four_layers();
    set_compute_work(in, {}, 1);
    const auto s = simulate(in, eight_ms_per_mib(), kMiB, kMiB);  // a bucket per gradient
    QCOMPARE(s.buckets, 4);
    QCOMPARE(s.compute_end, 42 * kMs);
    QCOMPARE(s.allreduces.size(), size_t{4});
    QCOMPARE(s.allreduces[0].first, 10 * kMs);
    QCOMPARE(s.allreduces[3].second, 48 * kMs);  // the last starts at 40 ms: 8 ms, after the 2 ms tail
    QCOMPARE(s.iteration, 48 * kMs);
    QCOMPARE(s.exposed, 6 * kMs);
  }

  void testComputeSlowsWhileAnAllreduceRuns() {
    IterationInputs in = four_layers();
    set_compute_work(in, {}, 1);
    AllreduceCost cost = eight_ms_per_mib();
    cost.compute_rate_beside_comm = 0.5;
    const auto s = simulate(in, cost, kMiB, kMiB);
    // 10 ms free, then each 10 ms gap computes 8 ms beside an allreduce at half speed
    // (4 ms of work) and its 6 ms rest alone: 14 ms per gap; the tail's 2 ms beside the
    // last allreduce take 4.
    QCOMPARE(s.allreduces[1].first, 24 * kMs);
    QCOMPARE(s.compute_end, (10 + 14 + 14 + 14 + 4) * kMs);
    // One bucket, at 40 ms: only the 2 ms tail computes beside an allreduce (in 4 ms).
    const auto one = simulate(in, cost, 4 * kMiB, 4 * kMiB);
    QCOMPARE(one.buckets, 1);
    QCOMPARE(one.compute_end, 44 * kMs);
    QCOMPARE(one.iteration, (40 + 32) * kMs);
  }

  void testAStretchedRecordingIsTakenBackToTheComputesOwnLength() {
    // Recorded at a bucket per gradient with compute at half speed beside each 8 ms
    // allreduce: gradients at 10, 24, 38, 52 ms, compute done at 56.
    IterationInputs in;
    for (double t : {10.0, 24.0, 38.0, 52.0})
      in.ready.push_back({kMiB, t * kMs, t * kMs, 0});
    in.compute_end = 56 * kMs;
    const std::vector<std::pair<double, double>> recorded = {
        {10 * kMs, 18 * kMs}, {24 * kMs, 32 * kMs}, {38 * kMs, 46 * kMs}, {52 * kMs, 60 * kMs}};
    set_compute_work(in, recorded, 0.5);
    for (const auto& r : in.ready)
      QCOMPARE(r.work, 10 * kMs);
    QCOMPARE(in.tail_work, 2 * kMs);
    AllreduceCost cost = eight_ms_per_mib();
    cost.compute_rate_beside_comm = 0.5;
    QCOMPARE(simulate(in, cost, kMiB, kMiB).compute_end, 56 * kMs);          // the recording, replayed
    QCOMPARE(simulate(in, cost, 4 * kMiB, 4 * kMiB).compute_end, 44 * kMs);  // one bucket: only the tail beside it
  }

  void testALaterRankHoldsTheBucketBack() {
    IterationInputs in = four_layers();
    in.ready[0].all = 15 * kMs;  // the other rank had the first gradient 5 ms later
    set_compute_work(in, {}, 1);
    const auto s = simulate(in, eight_ms_per_mib(), kMiB, kMiB);
    QCOMPARE(s.allreduces[0].first, 15 * kMs);
    QCOMPARE(s.allreduces[1].first, 23 * kMs);  // after the first, though its gradient was ready at 20
  }

  void testCommunicationSlowsBesideCompute() {
    IterationInputs in = four_layers();
    set_compute_work(in, {}, 1);
    AllreduceCost cost = eight_ms_per_mib();
    cost.compute_slowdown = 0.5;                            // 8 ms of allreduce take 16 beside compute
    const auto s = simulate(in, cost, 2 * kMiB, 2 * kMiB);  // gradients 0-1 at 20 ms, 2-3 at 40
    QCOMPARE(s.allreduces[0].first, 20 * kMs);
    QCOMPARE(s.allreduces[0].second, 47 * kMs);  // 16 ms of work: 11 in the 22 ms to 42 (half speed), 5 alone
    QCOMPARE(s.allreduces[1].second, 63 * kMs);
  }
};

DDPSCOPE_TEST_MAIN(TestBucketReplay)
#include "tst_bucket_replay.moc"
