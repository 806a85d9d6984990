// GPU time as HTA defines it: our figures against HTA's own on the H100 traces, and each
// definition (computation, communication, overlap, idle by cause) on a trace made to show
// it, worked out by hand.
#include <QtTest/QtTest>

#include "torch_import_support.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace torch_import_test;

class TestGpuTime : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:

  // GPU time on real traces (PyTorch 2.11 on an H100): each rank's figures are HTA's own
  // output on these files (HTA v0.6.0's source, commit f4d0062, its defaults:
  // get_temporal_breakdown, in us), in HTA's window (the last ProfilerStep left out,
  // times rounded to the trace's microseconds).
  void testGpuTimeMatchesTheTraces() {
    const QString dir = kFixtures + "/kineto_cuda_gloo_2";
    const std::string out = (tmp_.path() + "/gputime.ddprun").toStdString();
    import_torch_traces({dir.toStdString()}, out);
    RunStoreReader run(out);
    const GpuTimeBreakdown b = gpu_time_breakdown(run);
    QCOMPARE(b.ranks.size(), size_t{2});
    struct Hta {
      double idle_us, compute_us, non_compute_us, kernel_time_us;
    };
    const Hta hta[2] = {{52446, 467, 349, 53262}, {56902, 466, 330, 57698}};
    for (const GpuTimeSplit& s : b.ranks) {
      const Hta& h = hta[s.rank];
      QCOMPARE(std::round(s.span_ms * 1000), h.kernel_time_us);
      QCOMPARE(std::round(s.idle_ms * 1000), h.idle_us);
      QCOMPARE(std::round(s.computation_ms * 1000), h.compute_us);
      QCOMPARE(std::round((s.span_ms - s.computation_ms - s.idle_ms) * 1000), h.non_compute_us);
      QCOMPARE(s.communication_ms, 0.0);  // gloo: no NCCL kernels
      QVERIFY(std::isnan(s.overlap_ratio));
    }
    // Per iteration, exact: every kernel was launched inside a ProfilerStep, so the
    // iterations hold every kernel of the trace, and their classes' times are the trace's.
    for (const GpuTimeSplit& s : b.ranks) {
      const ReferenceGpuTime ref = reference_gpu_time(dir + QString("/rank%1.json.gz").arg(s.rank));
      int64_t kernels = 0;
      double computation = 0;
      for (const GpuTimeSplit& i : b.iterations) {
        if (i.rank != s.rank) continue;
        kernels += i.kernels;
        computation += i.computation_ms;
      }
      QCOMPARE(kernels, ref.kernels);
      QVERIFY(kernels > s.kernels);  // HTA's window left the last step out
      // Kernels of different steps never overlap here; 1 ns a kernel of rounding.
      QVERIFY(std::abs(computation - ref.computation * 1e-6) <= ref.kernels * 1e-6);
    }
    const auto json = run_stats_json(run);
    QVERIFY(json["gpu"].is_object());
    QCOMPARE(json["gpu"]["ranks"].size(), size_t{2});
    QCOMPARE(json["gpu"]["ranks"][0]["kernels"].get<int64_t>(), b.ranks[0].kernels);
  }

  void testGpuTimeDefinitions() {
    RunStoreReader run(write_gpu_definitions(tmp_.path()));
    const GpuTimeBreakdown b = gpu_time_breakdown(run);
    QCOMPARE(b.iterations.size(), size_t{4});
    const GpuTimeSplit& i1 = b.iterations[0];
    QCOMPARE(i1.rank, 0);
    QCOMPARE(i1.iteration, int64_t{1});
    QCOMPARE(i1.kernels, int64_t{6});
    QCOMPARE(i1.computation_ms, 0.017);  // [10, 25], [80, 81], [90, 91]
    QCOMPARE(i1.communication_ms, 0.008);
    QCOMPARE(i1.memory_ms, 0.002);
    QCOMPARE(i1.busy_ms, 0.024);  // [10, 30], [40, 42], [80, 81], [90, 91]
    QCOMPARE(i1.span_ms, 0.081);  // [10, 91]
    QCOMPARE(i1.idle_ms, 0.057);
    QCOMPARE(i1.comm_overlapping_compute_ms, 0.003);  // [22, 25]
    QCOMPARE(i1.overlap_ratio, 3.0 / 8.0);
    const GpuTimeSplit& r1i2 = b.iterations[3];
    QCOMPARE(r1i2.rank, 1);
    QCOMPARE(r1i2.computation_ms, 0.030);
    QCOMPARE(r1i2.overlap_ratio, 0.0);
    // The rank's figures take HTA's window: step 2, the last, is left out.
    QCOMPARE(b.ranks[0].kernels, int64_t{6});
    QCOMPARE(b.ranks[0].communication_ms, 0.008);
    QCOMPARE(b.ranks[0].computation_ms, 0.017);
    QCOMPARE(b.ranks[0].idle_ms, 0.057);
    // Idle by cause, per stream: on stream 7 the copy came 20 us after the gemm (launched
    // long before: kernel wait, under 30 us), then 38 us to the reduce (other); on
    // stream 8 the late kernel was launched at 80, after the stream ran dry at 25 (host
    // wait, 65 us). Stream 20 ran one kernel: no gap.
    std::map<int, GpuStreamIdle> idle;  // rank 0's, by stream track
    for (const auto& s : b.idle)
      if (s.rank == 0) idle[s.thread] = s;
    QCOMPARE(idle.size(), size_t{3});
    double host = 0, kernel = 0, other = 0;
    for (const auto& [thread, s] : idle)
      host += s.host_wait_ms, kernel += s.kernel_wait_ms, other += s.other_ms;
    QCOMPARE(host, 0.065);
    QCOMPARE(kernel, 0.020);
    QCOMPARE(other, 0.038);
    // Rank 0's longest stretches with every stream idle: [42, 80], [91, 110], [30, 40],
    // [81, 90] (us).
    std::vector<GpuGap> gaps;
    for (const auto& g : b.longest_gaps)
      if (g.rank == 0) gaps.push_back(g);
    QCOMPARE(gaps.size(), size_t{4});
    QCOMPARE(gaps[0].ms(), 0.038);
    QCOMPARE(gaps[0].begin_ns - gaps[1].begin_ns, int64_t{42000 - 91000});
    QCOMPARE(gaps[1].ms(), 0.019);
    QCOMPARE(gaps[3].ms(), 0.009);
    // Stream 7's queue: kernels launched at 1, 4, 5 and 107 us, ended at 20, 42, 81 and
    // 120: three queued from 5 to 20; over [1, 120] a mean of 146 / 119.
    int stream7 = -1;
    for (const ThreadRow& t : run.threads())
      if (t.rank == 0 && QString::fromStdString(t.name).endsWith("stream 7")) stream7 = t.thread;
    const auto q = std::find_if(b.queues.begin(), b.queues.end(),
                                [&](const GpuStreamQueue& q) { return q.rank == 0 && q.thread == stream7; });
    QVERIFY(q != b.queues.end());
    QCOMPARE(q->max_queued, int64_t{3});
    QCOMPARE(q->mean_queued, 146.0 / 119.0);
  }
};

DDPSCOPE_TEST_MAIN(TestGpuTime)
#include "tst_gpu_time.moc"
