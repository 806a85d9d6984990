// import-torch on Kineto traces that PyTorch 2.11 wrote on an H100 (tests/torch/fixtures):
// GPU kernels on their streams, the GPU's truth in the overlap analysis, real NCCL traces,
// and the hang verdict of a job whose rank 1 stopped early. Every figure is checked
// against the trace files themselves.
#include <QtTest/QtTest>

#include "collective_bandwidth.h"
#include "run_stats.h"
#include "run_stats_text.h"
#include "torch_import_support.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace torch_import_test;

class TestKinetoImport : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:

  // Kineto traces: ranks from distributedInfo, GPU rows as GPU streams with HTA's
  // kernel classes, launches joined to kernels by correlation id, and each rank's clock
  // offset and uncertainty stored.
  void testKinetoGpuTraces() {
    const std::string out = (tmp_.path() + "/gpu.ddprun").toStdString();
    const auto r = import_torch_traces({(kFixtures + "/kineto_cuda_gloo_2").toStdString()}, out);
    RunStoreReader run(out);
    QCOMPARE(run.run().backend, std::string("gloo"));
    bool gpu_stream = false;
    for (const auto& t : run.threads())
      gpu_stream = gpu_stream || t.name.rfind("GPU 0 stream ", 0) == 0;
    QVERIFY(gpu_stream);
    SpanQuery q;
    q.kinds = {Kind::GpuKernel};
    const auto kernels = run.spans(q);
    QVERIFY(kernels.size() > 100);
    q.kinds = {Kind::CudaRuntime};
    std::set<std::pair<int, int64_t>> launches;
    for (const auto& s : run.spans(q)) {
      QVERIFY(s.msg_id >= 0);  // every launch keeps its correlation id
      launches.insert({s.rank, s.msg_id});
    }
    std::set<std::pair<int, int64_t>> kernel_ids;
    int joined = 0;
    for (const auto& k : kernels) {
      QVERIFY(k.msg_id >= 0);
      kernel_ids.insert({k.rank, k.msg_id});
      joined += launches.count({k.rank, k.msg_id}) ? 1 : 0;
    }
    QCOMPARE(kernel_ids.size(), kernels.size());  // one launch a kernel
    QCOMPARE(joined, int(kernels.size()));
    q.kinds = {Kind::GpuMemcpy};
    QVERIFY(!run.spans(q).empty());
    QCOMPARE(r.clocks.size(), size_t{2});
    QVERIFY(r.clocks[1].matched_collectives > 10);
    QVERIFY(r.clocks[1].uncertainty_ns >= 0);
    QVERIFY(std::llabs(r.clocks[1].offset_ns) < 1000000);  // one machine: within 1 ms
    SqliteDb db(out, SQLITE_OPEN_READONLY);
    QCOMPARE(db.query_int64("SELECT clock_uncertainty_ns FROM ranks WHERE rank = 1"), r.clocks[1].uncertainty_ns);
  }

  // GPU truth in every view: the overlap analysis behind Summary, Overlap, Ranks, Compare
  // and stats takes compute and communication from the kernels, keeps the CPU's view
  // beside them, and the one straggler rule names the rank whose computation took longer.
  void testGpuTruthInTheOverlapAnalysis() {
    RunStoreReader run(write_gpu_definitions(tmp_.path()));
    const RunAnalysis a = analyze_run(run);
    QCOMPARE(a.iterations.size(), size_t{4});
    const IterationAnalysis& it = a.iterations[0];
    QCOMPARE(it.rank, 0);
    QVERIFY(it.from_gpu);
    QCOMPARE(it.iteration_ms, 0.1);  // the ProfilerStep
    QCOMPARE(it.compute_ms, 0.017);
    QCOMPARE(it.comm_ms, 0.008);
    QCOMPARE(it.exposed_comm_ms, 0.005);  // [25, 30]
    QCOMPARE(it.overlap_ratio, 1 - 5.0 / 8.0);
    QCOMPARE(it.exposed.size(), size_t{1});
    QCOMPARE(it.exposed[0].end - it.exposed[0].begin, int64_t{5000});
    QCOMPARE(it.gpu_span_ms, 0.081);
    QCOMPARE(it.gpu_idle_ms, 0.057);
    QCOMPARE(it.gpu_memory_ms, 0.002);
    QCOMPARE(it.cpu_comm_ms, 0.0);  // no DDP spans on the CPU here
    const auto stragglers = find_stragglers(a);
    QCOMPARE(stragglers.size(), size_t{1});
    QCOMPARE(stragglers[0].iteration, int64_t{2});
    QCOMPARE(stragglers[0].rank, 1);
    QVERIFY(stragglers[0].gpu);
    QCOMPARE(stragglers[0].lag_ms, 0.020);
    // The Breakdown: GPU computation, exposed NCCL time and the rest of the step.
    const auto rows = breakdown_by_iteration(a);
    QVERIFY(rows[0].gpu);
    QCOMPARE(rows[0].computation_ms, 0.017);
    QCOMPARE(rows[0].exposed_comm_ms, 0.005);
    QCOMPARE(rows[0].hidden_comm_ms, 0.003);
    QCOMPARE(rows[0].idle_ms, 0.1 - 0.017 - 0.005);
    QCOMPARE(rows[0].forward_ms + rows[0].backward_ms + rows[0].optimizer_ms, 0.0);
    QVERIFY(rows[3].straggler);
    QCOMPARE(main_straggler(breakdown_by_rank(rows)), 1);
    // stats: the same figures, said to be the GPU's, and one straggler list.
    const auto json = run_stats_json(run);
    QCOMPARE(json["summary"][0]["figures"].get<std::string>(), std::string("gpu"));
    QCOMPARE(json["summary"][0]["mean_compute_ms"].get<double>(), (0.017 + 0.010) / 2);
    QCOMPARE(json["iterations"][0]["cpu_comm_ms"].get<double>(), 0.0);
    QCOMPARE(json["stragglers"].size(), size_t{1});
    QCOMPARE(json["stragglers"][0]["rule"].get<std::string>(), std::string("gpu"));
    QCOMPARE(json["gpu"]["stragglers"][0]["rank"].get<int>(), 1);
  }

  // Real NCCL traces (two ranks of a 128-GPU job, HTA's public test data): each rank's
  // figures are HTA's own output on them (the fixture's README), and every view's
  // figures are the GPU's: communication is the NCCL kernels' ~200 ms an iteration, not
  // the CPU's 0.3 ms of enqueueing, each DDP bucket's allreduce is its NCCL kernel, and
  // the one straggler rule names rank 1, as HTA does.
  void testRealNcclTracesTellTheGpusTruth() {
    const QString dir = kFixtures + "/hta_nccl_of_128";
    const std::string out = (tmp_.path() + "/of128.ddprun").toStdString();
    const auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QVERIFY(std::find(r.notes.begin(), r.notes.end(),
                      "2 of the job's 128 ranks have a trace; no trace for ranks 2-127") != r.notes.end());
    RunStoreReader run(out);
    const GpuTimeBreakdown b = gpu_time_breakdown(run);
    struct Hta {
      double idle, computation, non_computation, overlap;
    };
    const Hta hta[2] = {{53.56, 17.71, 28.74, 11.81}, {54.72, 22.57, 22.72, 20.05}};
    for (const GpuTimeSplit& s : b.ranks) {
      const Hta& h = hta[s.rank];
      const auto pct = [](double v) { return std::round(v * 10000) / 100; };  // HTA's rounding
      QCOMPARE(pct(s.idle_ms / s.span_ms), h.idle);
      QCOMPARE(pct(s.computation_ms / s.span_ms), h.computation);
      QCOMPARE(pct((s.span_ms - s.computation_ms - s.idle_ms) / s.span_ms), h.non_computation);
      QCOMPARE(pct(s.overlap_ratio), h.overlap);
    }
    const RunAnalysis a = analyze_run(run);
    QCOMPARE(a.iterations.size(), size_t{4});
    for (const IterationAnalysis& it : a.iterations) {
      QVERIFY(it.from_gpu);
      QVERIFY2(it.comm_ms > 150 && it.cpu_comm_ms < 1, qPrintable(QString::number(it.comm_ms)));
      QVERIFY(it.overlap_ratio > 0.1 && it.overlap_ratio < 0.25);
    }
    // Each bucket's allreduce: the times of an NCCL kernel of its rank.
    SpanQuery q;
    q.kinds = {Kind::GpuComm};
    std::set<std::tuple<int, int64_t, int64_t>> kernels;
    for (const SpanRow& s : run.spans(q))
      kernels.insert({s.rank, s.t_begin_ns, s.t_end_ns});
    QVERIFY(a.buckets.size() >= 4);
    for (const BucketTiming& bucket : a.buckets) {
      QVERIFY(bucket.gpu);
      QVERIFY(kernels.count({bucket.rank, bucket.start_ns, bucket.end_ns}));
    }
    const auto stragglers = find_stragglers(a);
    QCOMPARE(stragglers.size(), size_t{1});
    QCOMPARE(stragglers[0].rank, 1);
    QCOMPARE(main_straggler(breakdown_by_rank(breakdown_by_iteration(a))), 1);
    // compare: the GPU's parts, the CPU's phases left out.
    RunStoreReader again(out);
    const RunComparison c = compare_runs(run, again);
    QVERIFY(c.a.gpu);
    double computation = 0, exposed = 0;
    for (const auto& it : a.iterations)
      computation += it.compute_ms, exposed += it.exposed_comm_ms;
    QCOMPARE(c.a.gpu_computation_ms, computation / 4);
    QCOMPARE(c.a.exposed_comm_ms, exposed / 4);
    const QString text = QString::fromStdString(comparison_text(c));
    QVERIFY2(text.contains("GPU computation") && !text.contains("backward compute"), qPrintable(text));
  }

  // Bandwidth on 2 traces of a 128-GPU job: each bucket's bytes are the trace's own (its
  // nccl:all_reduce's Input Dims of floats), the bus factor is the job's 128 ranks'
  // 2(n-1)/n, and since the other 126 ranks' arrivals are unknown every rate is said to be
  // a lower bound.
  void testBandwidthOfTwoOf128RanksIsALowerBound() {
    const std::string out = (tmp_.path() + "/of128bw.ddprun").toStdString();
    import_torch_traces({(kFixtures + "/hta_nccl_of_128").toStdString()}, out, {.force = true});
    RunStoreReader run(out);
    const BandwidthReport report = analyze_bandwidth(run);
    QCOMPARE(report.group_ranks, 128);
    QCOMPARE(report.ranks_recorded, 2);
    QVERIFY(report.lower_bound());
    const RunAnalysis a = analyze_run(run);
    bool traced_size = false;
    int rated = 0;
    for (const BucketTiming& b : a.buckets) {
      traced_size = traced_size || b.bytes == int64_t{26258430} * 4;  // rank 0's trace: Input Dims [[26258430]], float
      QCOMPARE(b.group_ranks, 128);
      QVERIFY(!b.every_arrival);
      int64_t last = 0;
      for (const BucketTiming& o : a.buckets)
        if (o.iteration == b.iteration && o.bucket == b.bucket) last = std::max(last, o.start_ns);
      const auto rate = bucket_rate(b);
      if (b.end_ns <= last) continue;
      QVERIFY(rate);
      const double expected = static_cast<double>(b.bytes) / static_cast<double>(b.end_ns - last) * 2 * 127 / 128;
      QVERIFY2(std::fabs(rate->busbw_gbps - expected) < 1e-9 * expected, qPrintable(QString::number(expected)));
      ++rated;
    }
    QVERIFY(traced_size);
    QVERIFY(rated >= 4);
    const std::string text = run_stats_text(run_stats_json(run), true);
    QVERIFY2(text.find("The run holds 2 of the job's 128 ranks") != std::string::npos, text.c_str());
  }

  // A job where rank 1 stopped after 2 steps and rank 0 waited in the next allreduce:
  // the Hang verdict names rank 1 and the collective.
  void testHangNamesTheRankBehind() {
    const std::string out = (tmp_.path() + "/hang.ddprun").toStdString();
    import_torch_traces({(kFixtures + "/kineto_cuda_stopped").toStdString()}, out);
    RunStoreReader run(out);
    const HangReport h = analyze_hang(run);
    QVERIFY2(h.culprits == std::vector<int>{1}, h.verdict.c_str());
    QVERIFY2(QString::fromStdString(h.verdict).contains("Rank 1 never entered allreduce"), h.verdict.c_str());
    QVERIFY(h.ranks[0].blocked_in.has_value());
    // Rank 0 waits in the first collective rank 1 never issued (the later bucket
    // allreduces queue behind it), from when it issued it, inside its backward.
    QCOMPARE(h.ranks[0].blocked_in->seq, h.ranks[1].latest_seq + 1);
    QVERIFY(h.ranks[0].phase == HangPhase::InBackward);
    QVERIFY(h.now_ns - h.ranks[0].blocked_in->started_ns > 500'000'000);  // the trace ran 0.7 s more
    // Rank 1 ran two steps; its ProfilerStep#3 began as the profiler stopped and holds
    // nothing: a mark, not an iteration. The profiler's own instants are not stored.
    QCOMPARE(h.ranks[1].completed_iterations, int64_t{2});
    QVERIFY(h.ranks[1].phase == HangPhase::BetweenIterations);
    SpanQuery q;
    q.kinds = {Kind::Iteration};
    q.rank = 1;
    QCOMPARE(run.spans(q).size(), size_t{2});
    q.kinds = {Kind::Mark};
    std::vector<std::string> marks;
    for (const auto& m : run.spans(q))
      marks.push_back(m.name);
    QCOMPARE(marks, std::vector<std::string>{"ProfilerStep#3 begun, then profiling stopped (no work in it)"});
  }

  // The same job as if rank 0 had aborted when its wait timed out (gloo raises the timeout
  // on a thread of its own, which ends the process with SIGABRT): rank 1, which never
  // entered the allreduce, stays the culprit, and rank 0 is said to have waited, then
  // died. Killed by another signal, the dead rank is named first, as before.
  void testARankThatAbortedInItsWaitIsNotTheCulprit() {
    const std::string out = (tmp_.path() + "/aborted.ddprun").toStdString();
    import_torch_traces({(kFixtures + "/kineto_cuda_stopped").toStdString()}, out);
    auto died = [&](const char* signal) {
      SqliteDb db(out, SQLITE_OPEN_READWRITE);
      db.exec(std::string("UPDATE runs SET status = 'failed', dead_rank = 0, dead_signal = '") + signal + "'");
    };
    died("signal 6 (Aborted)");
    {
      RunStoreReader run(out);
      const HangReport h = analyze_hang(run);
      QVERIFY2(h.culprits == std::vector<int>{1}, h.verdict.c_str());
      QVERIFY2(QString::fromStdString(h.verdict).contains(QRegularExpression(
                   R"(^Rank 1 never entered allreduce #\d+, which rank 0 waited in; rank 1 was .*; rank 0 then died )"
                   R"(by signal 6 \(Aborted\) when its wait timed out\.$)")),
               h.verdict.c_str());
      QVERIFY2(std::any_of(h.findings.begin(), h.findings.end(),
                           [](const std::string& f) {
                             return QString::fromStdString(f).contains(QRegularExpression(
                                 R"(^rank 0 waited in allreduce #\d+ \(.*\) for .* m?s, then died by signal 6)"));
                           }),
               h.verdict.c_str());
    }
    died("signal 9 (Killed)");
    RunStoreReader run(out);
    const HangReport h = analyze_hang(run);
    QVERIFY2(h.culprits == std::vector<int>{0}, h.verdict.c_str());
    QVERIFY2(QString::fromStdString(h.verdict).startsWith("Rank 0 died by signal 9 (Killed)"), h.verdict.c_str());
  }
};

DDPSCOPE_TEST_MAIN(TestKinetoImport)
#include "tst_kineto_import.moc"
