// import-torch on real PyTorch profiler traces: the older list form made here by Debian's
// torch 1.13 (/usr/bin/python3, a 2-rank gloo DDP job with several buckets), and Kineto
// traces that PyTorch 2.11 wrote on an H100 (tests/torch/fixtures: CPU and CUDA DDP over
// gloo, a 1-rank NCCL job, tensorboard_trace_handler's .pt.trace.json.gz, a job where
// rank 1 stopped early). Every figure is checked against the trace files themselves.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>
#include <set>
#include <zlib.h>

#include "gpu_time.h"
#include "overlap_analysis.h"
#include "time_breakdown.h"
#include "hang_analysis.h"
#include "kineto_export.h"
#include "sqlite_db.h"
#include "run_compare.h"
#include "run_stats.h"
#include "run_store_reader.h"
#include "torch_trace_import.h"

using namespace ddpscope::probes;

namespace {

const QString kFixtures = QStringLiteral(DDPSCOPE_TORCH_FIXTURES);

// The whole trace, read with another parser (nlohmann, through zlib): the reference.
nlohmann::json load_trace_object(const QString& path) {
  gzFile f = gzopen(path.toStdString().c_str(), "rb");
  std::string text;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return nlohmann::json::parse(text);
}

// Its events.
nlohmann::json load_trace(const QString& path) {
  nlohmann::json j = load_trace_object(path);
  return j.is_array() ? j : j["traceEvents"];
}

// ProfilerStep#N -> duration in ns, as the trace says (CPU rows only).
std::map<int64_t, int64_t> profiler_steps(const QString& path) {
  std::map<int64_t, int64_t> steps;
  for (const auto& e : load_trace(path)) {
    const std::string name = e.value("name", "");
    if (name.rfind("ProfilerStep#", 0) == 0 && e.value("cat", "") != "gpu_user_annotation")
      steps[std::stoll(name.substr(13))] = std::llround(e["dur"].get<double>() * 1000.0);
  }
  return steps;
}

// The process's peak resident memory so far (VmHWM), in kB.
long peak_rss_kb() {
  QFile f("/proc/self/status");
  f.open(QIODevice::ReadOnly);
  for (const QByteArray& line : f.readAll().split('\n'))
    if (line.startsWith("VmHWM:")) return line.mid(6).trimmed().split(' ').front().toLong();
  return 0;
}

QString write_file(const QString& dir, const QString& name, const QByteArray& bytes) {
  const QString path = dir + "/" + name;
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write(bytes);
  return path;
}

// The error import_torch_traces throws, or "" when it succeeds.
QString import_error(const std::vector<std::string>& in, const std::string& out) {
  try {
    import_torch_traces(in, out);
  } catch (const TraceFileError& e) {
    return QString::fromStdString(e.message());
  }
  return {};
}

// A small Kineto trace written here: ProfilerStep spans on one CPU thread, a launch
// (cudaLaunchKernel) for each kernel inside the step given, and the kernels on the
// streams given. Times in microseconds.
struct TestKernel {
  int step;
  const char* cat;  // kernel, gpu_memcpy, gpu_memset
  const char* name;
  int stream;
  double begin, end;
  double launch = -1;  // when the CPU launched it; -1: early in its step
};

QString write_kineto_trace(const QString& dir, int rank, const std::vector<TestKernel>& kernels,
                           bool profiler_steps = true) {
  nlohmann::json events = nlohmann::json::array();
  for (int step = 1; step <= 2 && profiler_steps; ++step)
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", "ProfilerStep#" + std::to_string(step)},
                      {"pid", 100},
                      {"tid", 100},
                      {"ts", (step - 1) * 100.0},
                      {"dur", 100.0}});
  int correlation = 1;
  for (const TestKernel& k : kernels) {
    events.push_back({{"ph", "X"},
                      {"cat", "cuda_runtime"},
                      {"name", "cudaLaunchKernel"},
                      {"pid", 100},
                      {"tid", 100},
                      {"ts", k.launch >= 0 ? k.launch : (k.step - 1) * 100.0 + correlation},
                      {"dur", 0.5},
                      {"args", {{"correlation", correlation}}}});
    events.push_back({{"ph", "X"},
                      {"cat", k.cat},
                      {"name", k.name},
                      {"pid", 0},
                      {"tid", k.stream},
                      {"ts", k.begin},
                      {"dur", k.end - k.begin},
                      {"args", {{"device", 0}, {"stream", k.stream}, {"correlation", correlation}}}});
    ++correlation;
  }
  const nlohmann::json trace = {{"schemaVersion", 1},
                                {"distributedInfo",
                                 {{"backend", "nccl"},
                                  {"rank", rank},
                                  {"world_size", 2},
                                  {"pg_config", {{{"pg_name", "0"}, {"pg_desc", "default_pg"}, {"ranks", {0, 1}}}}}}},
                                {"baseTimeNanoseconds", 1700000000000000000LL},
                                {"traceEvents", events}};
  return write_file(dir, QString("rank%1.json").arg(rank), QByteArray::fromStdString(trace.dump()));
}

// HTA's figures from a trace file directly (nlohmann, not the importer): per class, the
// merged time of its kernels, in ns.
struct ReferenceGpuTime {
  int64_t computation = 0, communication = 0, memory = 0, busy = 0, span = 0, kernels = 0;
};

int64_t merged_length(std::vector<std::pair<int64_t, int64_t>> v) {
  std::sort(v.begin(), v.end());
  int64_t total = 0, begin = 0, end = -1;
  for (const auto& [b, e] : v) {
    if (b > end) {
      total += end > begin ? end - begin : 0;
      begin = b;
      end = e;
    } else {
      end = std::max(end, e);
    }
  }
  return total + (end > begin ? end - begin : 0);
}

ReferenceGpuTime reference_gpu_time(const QString& path) {
  std::vector<std::pair<int64_t, int64_t>> comp, comm, mem, all;
  ReferenceGpuTime r;
  for (const auto& e : load_trace(path)) {
    const std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    const int64_t b = std::llround(e["ts"].get<double>() * 1000.0);
    const std::pair<int64_t, int64_t> i{b, b + std::llround(e["dur"].get<double>() * 1000.0)};
    const std::string name = e.value("name", "");
    (cat != "kernel" ? mem : name.rfind("nccl", 0) == 0 ? comm : comp).push_back(i);
    all.push_back(i);
    ++r.kernels;
  }
  r.computation = merged_length(comp);
  r.communication = merged_length(comm);
  r.memory = merged_length(mem);
  r.busy = merged_length(all);
  r.span = std::max_element(all.begin(), all.end(), [](auto& a, auto& b) { return a.second < b.second; })->second -
           std::min_element(all.begin(), all.end())->first;
  return r;
}

}  // namespace

class TestTorchImport : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString list_dir_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    // A real 2-rank gloo DDP job under Debian's torch 1.13: the list form.
    list_dir_ = tmp_.path() + "/list";
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedChannels);
    p.start("/usr/bin/python3",
            {QStringLiteral(DDPSCOPE_TORCH_SCRIPTS) + "/make_torch_traces.py", list_dir_, "--np", "2", "--steps", "3"});
    QVERIFY(p.waitForFinished(240000));
    QCOMPARE(p.exitCode(), 0);
  }

  // Iterations are the ProfilerStep spans, one for one, with their durations; the rank
  // comes from the file name (the list form has no distributedInfo).
  void testIterationsAreTheProfilerSteps_data() {
    QTest::addColumn<QString>("dir");
    QTest::addColumn<QString>("form");
    QTest::newRow("list form (torch 1.13, gloo, CPU)") << QString("list") << "list";
    QTest::newRow("Kineto (torch 2.11, gloo, CPU)") << kFixtures + "/kineto_cpu_gloo_2"
                                                    << "kineto";
    QTest::newRow("Kineto (torch 2.11, gloo, CUDA)") << kFixtures + "/kineto_cuda_gloo_2"
                                                     << "kineto";
    QTest::newRow("Kineto .pt.trace.json.gz") << kFixtures + "/kineto_tb_gz"
                                              << "kineto";
  }
  void testIterationsAreTheProfilerSteps() {
    QFETCH(QString, dir);
    QFETCH(QString, form);
    if (dir == "list") dir = list_dir_;
    const std::string out = (tmp_.path() + "/steps.ddprun").toStdString();
    TorchImportOptions options{.force = true};
    double last = -1;
    bool monotonic = true;
    options.progress = [&](double f, const std::string&) {
      monotonic = monotonic && f >= last;
      last = f;
      return true;
    };
    const TorchImportResult r = import_torch_traces({dir.toStdString()}, out, options);
    QVERIFY(monotonic);
    QCOMPARE(last, 1.0);
    QCOMPARE(r.ranks, (std::vector<int>{0, 1}));
    QVERIFY(r.absent.empty());
    RunStoreReader run(out);
    QCOMPARE(QString::fromStdString(nlohmann::json::parse(run.run().config_json)["form"]), form);
    const QStringList files = QDir(dir).entryList({"*.json", "*.json.gz"}, QDir::Files, QDir::Name);
    QCOMPARE(files.size(), 2);
    for (int rank = 0; rank < 2; ++rank) {
      const auto steps = profiler_steps(dir + "/" + files[rank]);
      QVERIFY(steps.size() >= 3);
      SpanQuery q;
      q.rank = rank;
      q.kinds = {Kind::Iteration};
      const auto iterations = run.spans(q);
      QCOMPARE(iterations.size(), steps.size());
      for (const auto& it : iterations) {
        QVERIFY2(steps.count(it.iteration), qPrintable(QString("iteration %1").arg(it.iteration)));
        QCOMPARE(it.t_end_ns - it.t_begin_ns, steps.at(it.iteration));
      }
      // Every span of a step is tagged with it: forward, backward and optimizer too.
      for (Kind k : {Kind::Forward, Kind::Backward, Kind::Optimizer, Kind::Allreduce}) {
        SpanQuery kq;
        kq.rank = rank;
        kq.kinds = {k};
        const auto spans = run.spans(kq);
        QVERIFY2(!spans.empty(), kind_name(k));
        for (const auto& s : spans)
          QVERIFY2(s.iteration >= 0, kind_name(k));
      }
    }
  }

  // DDP's bucket allreduces are recognised (several per step, numbered from 0), the
  // backend's collectives are numbered per group in the same order on every rank, and
  // stats' communication time is the union of the bucket allreduces.
  void testCollectivesBucketsAndCommunicationTime() {
    const std::string out = (tmp_.path() + "/comm.ddprun").toStdString();
    import_torch_traces({list_dir_.toStdString()}, out, {.force = true});
    RunStoreReader run(out);
    std::vector<std::vector<std::string>> ops(2);
    for (int rank = 0; rank < 2; ++rank) {
      SpanQuery q;
      q.rank = rank;
      q.kinds = {Kind::PgOp};
      int64_t seq = 0;
      for (const auto& s : run.spans(q)) {
        QCOMPARE(s.seq, ++seq);
        ops[rank].push_back(s.name);
      }
      QVERIFY(seq >= 9);  // 3 buckets a step, 3 steps, and DDP's broadcasts
    }
    QCOMPARE(ops[0], ops[1]);
    const auto stats = run_stats_json(run);
    for (const auto& row : stats["iterations"]) {
      SpanQuery q;
      q.rank = row["rank"];
      q.iteration = row["iteration"];
      q.kinds = {Kind::Allreduce};
      auto spans = run.spans(q);
      QVERIFY2(spans.size() >= 3, "several buckets a step");
      std::set<int64_t> buckets;
      for (const auto& s : spans)
        buckets.insert(s.bucket);
      QCOMPARE(int64_t(buckets.size()), int64_t(spans.size()));
      QCOMPARE(*buckets.begin(), int64_t{0});
      std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.t_begin_ns < b.t_begin_ns; });
      int64_t merged = 0, end = INT64_MIN;
      for (const auto& s : spans) {
        const int64_t b = std::max(s.t_begin_ns, end);
        if (s.t_end_ns > b) merged += s.t_end_ns - b;
        end = std::max(end, s.t_end_ns);
      }
      QCOMPARE(std::llround(row["comm_ms"].get<double>() * 1e6), merged);
      // The Breakdown adds up: no part is longer than the iteration.
      const double it_ms = row["iteration_ms"];
      for (const char* part : {"forward_ms", "backward_ms", "optimizer_ms", "exposed_comm_ms"})
        QVERIFY2(row[part].get<double>() <= it_ms + 1e-6, part);
      QVERIFY(row["exposed_comm_ms"].get<double>() <= row["comm_ms"].get<double>() + 1e-6);
    }
  }

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

  // The definitions on a trace made to show each: NCCL kernels overlapping computation on
  // another stream, a copy, idle gaps of each cause, and in step 2 a rank whose
  // computation is slower (the straggler). Every figure below is worked out by hand from
  // the kernels' times (us).
  std::vector<TestKernel> step1_kernels() const {
    const char* nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    return {{1, "kernel", "ampere_sgemm_128x64_nn", 7, 10, 20},
            {1, "kernel", "vectorized_elementwise_kernel", 8, 15, 25},
            {1, "kernel", nccl, 20, 22, 30},
            {1, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 7, 40, 42},
            {1, "kernel", "reduce_kernel", 7, 80, 81},
            {1, "kernel", "late_elementwise_kernel", 8, 90, 91, 80}};
  }
  std::string write_gpu_definitions() {
    const QString dir = tmp_.path() + "/gpudefs";
    QDir().mkpath(dir);
    const char* nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    auto rank0 = step1_kernels(), rank1 = step1_kernels();
    rank0.push_back({2, "kernel", "ampere_sgemm_128x64_nn", 7, 110, 120});
    rank0.push_back({2, "kernel", nccl, 20, 120, 125});
    rank1.push_back({2, "kernel", "ampere_sgemm_128x64_nn", 7, 110, 140});
    rank1.push_back({2, "kernel", nccl, 20, 140, 142});
    write_kineto_trace(dir, 0, rank0);
    write_kineto_trace(dir, 1, rank1);
    const std::string out = (tmp_.path() + "/gpudefs.ddprun").toStdString();
    import_torch_traces({dir.toStdString()}, out, {.force = true});
    return out;
  }

  void testGpuTimeDefinitions() {
    RunStoreReader run(write_gpu_definitions());
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

  // GPU truth in every view: the overlap analysis behind Summary, Overlap, Ranks, Compare
  // and stats takes compute and communication from the kernels, keeps the CPU's view
  // beside them, and the one straggler rule names the rank whose computation took longer.
  void testGpuTruthInTheOverlapAnalysis() {
    RunStoreReader run(write_gpu_definitions());
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

  // A trace profiled without a schedule has no ProfilerStep: it is one iteration, as
  // TensorBoard and HTA take it, and the import says so.
  void testATraceWithoutProfilerStepIsOneIteration() {
    const QString dir = tmp_.path() + "/nosteps";
    QDir().mkpath(dir);
    auto kernels = step1_kernels();
    for (auto& k : kernels)
      k.launch = k.launch >= 0 ? k.launch : 1;
    write_kineto_trace(dir, 0, kernels, false);
    write_kineto_trace(dir, 1, kernels, false);
    const std::string out = (tmp_.path() + "/nosteps.ddprun").toStdString();
    const auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QVERIFY(std::find(r.notes.begin(), r.notes.end(),
                      "rank 0's trace has no ProfilerStep: the whole trace is one iteration (as TensorBoard and "
                      "HTA take it)") != r.notes.end());
    RunStoreReader run(out);
    QVERIFY(QString::fromStdString(run.run().message).contains("no ProfilerStep"));
    const RunAnalysis a = analyze_run(run);
    QCOMPARE(a.iterations.size(), size_t{2});
    for (const auto& it : a.iterations) {
      QCOMPARE(it.iteration, int64_t{1});
      QVERIFY(it.from_gpu);
      QCOMPARE(it.compute_ms, 0.017);
      QCOMPARE(it.iteration_ms, 0.090);  // the first launch (1 us) to the last kernel's end (91 us)
    }
    SpanQuery q;
    q.kinds = {Kind::Iteration};
    const auto spans = run.spans(q);
    QCOMPARE(spans.size(), size_t{2});
    QCOMPARE(QString::fromStdString(spans[0].name), QString("whole trace (no ProfilerStep): one iteration"));
    // HTA's window: no step to leave out, every kernel counts.
    const GpuTimeBreakdown b = gpu_time_breakdown(run);
    QCOMPARE(b.ranks[0].kernels, int64_t{6});
    const auto json = run_stats_json(run);
    QCOMPARE(json["summary"][0]["iterations"].get<int>(), 1);
  }

  // An imported job exported again as Kineto traces (export --kineto) imports into the
  // same run: every span with its fields and thread, the clock uncertainty, the metrics
  // and the statistics, GPU time included. Both trace forms.
  void testKinetoExportRoundTrip_data() {
    QTest::addColumn<QString>("source");
    QTest::newRow("kineto, CUDA") << kFixtures + "/kineto_cuda_gloo_2";
    QTest::newRow("list form, torch 1.13") << list_dir_;
  }
  void testKinetoExportRoundTrip() {
    QFETCH(QString, source);
    const QString dir = tmp_.path() + "/roundtrip-" + QString::number(QTest::currentDataTag()[0]);
    const std::string first = (dir + "-first.ddprun").toStdString(), again = (dir + "-again.ddprun").toStdString();
    import_torch_traces({source.toStdString()}, first, {.force = true});
    RunStoreReader a(first);
    const auto exported = export_kineto_traces(a, (dir + "/traces").toStdString(), true);
    QCOMPARE(exported.files.size(), a.ranks().size());
    const auto r = import_torch_traces({(dir + "/traces").toStdString()}, again, {.force = true});
    RunStoreReader b(again);
    auto rows = [](RunStoreReader& run) {
      std::vector<std::string> out;
      const auto threads = run.threads();
      for (const SpanRow& s : run.spans()) {
        std::string thread;
        for (const auto& t : threads)
          if (t.rank == s.rank && t.thread == s.thread) thread = t.name;
        out.push_back(nlohmann::json{s.rank, thread, kind_name(s.kind), s.name, s.t_begin_ns, s.t_end_ns, s.iteration,
                                     s.bucket, s.param, s.bytes, s.peer, s.seq, s.ctx_id, s.msg_id}
                          .dump());
      }
      std::sort(out.begin(), out.end());
      return out;
    };
    const auto before = rows(a), after = rows(b);
    QVERIFY(before.size() > 1000);
    QCOMPARE(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i)
      QCOMPARE(after[i], before[i]);
    QCOMPARE(b.metrics().size(), a.metrics().size());
    for (size_t k = 0; k < r.clocks.size(); ++k) {
      QVERIFY(r.clocks[k].kept);
      SqliteDb da(first, SQLITE_OPEN_READONLY), db(again, SQLITE_OPEN_READONLY);
      const std::string q =
          "SELECT coalesce(clock_uncertainty_ns, -1) FROM ranks WHERE rank = " + std::to_string(r.clocks[k].rank);
      QCOMPARE(db.query_int64(q), da.query_int64(q));
    }
    auto stats = [](RunStoreReader& run) {
      auto j = run_stats_json(run);
      j.erase("run");
      j.erase("ranks");
      return j.dump();
    };
    QCOMPARE(stats(b), stats(a));
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
    QCOMPARE(h.ranks[0].phase, std::string("in backward"));
    QVERIFY(h.now_ns - h.ranks[0].blocked_in->started_ns > 500'000'000);  // the trace ran 0.7 s more
    // Rank 1 ran two steps; its ProfilerStep#3 began as the profiler stopped and holds
    // nothing: a mark, not an iteration. The profiler's own instants are not stored.
    QCOMPARE(h.ranks[1].completed_iterations, int64_t{2});
    QCOMPARE(h.ranks[1].phase, std::string("between iterations"));
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

  // A subset of the ranks opens as those ranks and says which are absent.
  void testSubsetOfRanks() {
    const std::string out = (tmp_.path() + "/subset.ddprun").toStdString();
    const auto r = import_torch_traces({(kFixtures + "/kineto_cpu_gloo_2/rank1.json.gz").toStdString()}, out);
    QCOMPARE(r.ranks, std::vector<int>{1});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{0, 0}}));
    QCOMPARE(r.world_size, 2);
    RunStoreReader run(out);
    QVERIFY(QString::fromStdString(run.run().message).contains("no trace for rank 0"));
  }

  // TensorBoard's sample names (worker0, worker1) give the ranks of traces without
  // distributedInfo; a host_pid name has none, and --rank FILE=N says it by hand.
  void testRanksFromNamesAndByHand() {
    const QString dir = tmp_.path() + "/named";
    QDir().mkpath(dir);
    for (int rank = 0; rank < 2; ++rank) {
      auto trace = load_trace_object(kFixtures + QString("/kineto_cpu_gloo_2/rank%1.json.gz").arg(rank));
      trace.erase("distributedInfo");
      write_file(dir, QString("worker%1.pt.trace.json").arg(rank), QByteArray::fromStdString(trace.dump()));
    }
    const std::string out = (tmp_.path() + "/named.ddprun").toStdString();
    auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QCOMPARE(r.ranks, (std::vector<int>{0, 1}));
    // host_pid names: refused, saying how to give the rank; then given.
    const QString a = dir + "/node1_4242.1.pt.trace.json", b = dir + "/node2_4343.1.pt.trace.json";
    QVERIFY(QFile::rename(dir + "/worker0.pt.trace.json", a));
    QVERIFY(QFile::rename(dir + "/worker1.pt.trace.json", b));
    const QString error = import_error({a.toStdString(), b.toStdString()}, out + ".refused");
    QVERIFY2(error.contains("does not say which rank it is") && error.contains("--rank '" + a + "=N'"),
             qPrintable(error));
    TorchImportOptions options{.force = true};
    options.ranks = {{b.toStdString(), 0}, {a.toStdString(), 1}};
    r = import_torch_traces({a.toStdString(), b.toStdString()}, out, options);
    QCOMPARE(r.ranks, (std::vector<int>{0, 1}));
    RunStoreReader run(out);
    const auto config = nlohmann::json::parse(run.run().config_json);
    QCOMPARE(QString::fromStdString(config["traces"]["0"]), QFileInfo(b).absoluteFilePath());
    // --rank for a file that is not imported is a mistake, said as such.
    options.ranks = {{(dir + "/other.json").toStdString(), 3}};
    bool refused = false;
    try {
      import_torch_traces({a.toStdString(), b.toStdString()}, out, options);
    } catch (const TraceFileError& e) {
      refused = QString::fromStdString(e.message()).contains("not one of the traces to import");
    }
    QVERIFY(refused);
  }

  // Missing ranks are named as runs ("2-127"), and memory follows the files read, not the
  // world size a trace claims: a header saying 10^9 ranks imports in a few MB.
  void testMissingRanksAsRuns() {
    const QString dir = tmp_.path() + "/of128";
    QDir().mkpath(dir);
    for (int rank = 0; rank < 2; ++rank) {
      auto trace = load_trace_object(kFixtures + QString("/kineto_cpu_gloo_2/rank%1.json.gz").arg(rank));
      trace["distributedInfo"]["world_size"] = 128;
      write_file(dir, QString("rank%1.json").arg(rank), QByteArray::fromStdString(trace.dump()));
    }
    const std::string out = (tmp_.path() + "/of128.ddprun").toStdString();
    auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QCOMPARE(r.world_size, 128);
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{2, 127}}));
    QVERIFY(std::find(r.notes.begin(), r.notes.end(),
                      "2 of the job's 128 ranks have a trace; no trace for ranks 2-127") != r.notes.end());
    // Rank 1 alone: a gap before it and after it.
    r = import_torch_traces({(dir + "/rank1.json").toStdString()}, out, {.force = true});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{0, 0}, {2, 127}}));
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["distributedInfo"]["world_size"] = 1000000000;
    const QString huge = write_file(tmp_.path(), "huge_world.json", QByteArray::fromStdString(trace.dump()));
    const long rss_before = peak_rss_kb();
    r = import_torch_traces({huge.toStdString()}, out, {.force = true});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{1, 999999999}}));
    QVERIFY2(peak_rss_kb() - rss_before < 64 * 1024, qPrintable(QString::number(peak_rss_kb() - rss_before)));
    RunStoreReader run(out);
    QVERIFY(run.run().config_json.size() < 100000);
  }

  // Bad numbers are left out and counted, never stored: NaN and infinite times, times past
  // what ns since 1970 hold, negative durations (issue 49).
  void testBadNumbersAreLeftOutAndCounted() {
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    const nlohmann::json first = trace["traceEvents"][10];
    auto bad = [&](const char* ts, const char* dur) {
      nlohmann::json e = first;
      e["ph"] = "X";
      e["ts"] = ts;
      e["dur"] = dur;
      trace["traceEvents"].push_back(e);
    };
    bad("1.0", "-5.0");
    bad("2.0", "-0.5");
    bad("NaN", "1.0");
    bad("1.0", "Infinity");
    bad("1e300", "1.0");
    // nlohmann writes numbers it can hold: the literals go in as text, then unquoted.
    std::string text = trace.dump();
    for (const char* literal : {"-5.0", "-0.5", "NaN", "1.0", "Infinity", "1e300", "2.0"})
      text = QString::fromStdString(text).replace(QString("\"%1\"").arg(literal), QString(literal)).toStdString();
    const QString dir = tmp_.path() + "/badnumbers";
    QDir().mkpath(dir);
    write_file(dir, "rank0.json", QByteArray::fromStdString(text));
    const std::string out = (tmp_.path() + "/badnumbers.ddprun").toStdString();
    const auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    const std::string note =
        "rank 0: 5 events left out (2 with a negative duration and 3 with a time that is not a number, infinite or "
        "out of range)";
    QVERIFY2(std::find(r.notes.begin(), r.notes.end(), note) != r.notes.end(), r.notes.front().c_str());
    RunStoreReader run(out);
    for (const SpanRow& s : run.spans()) {
      QVERIFY(s.t_end_ns >= s.t_begin_ns);
      QVERIFY(s.t_begin_ns > 1'000'000'000'000'000'000LL);  // 2001 on: the trace's own times
    }
  }

  // A rank or world size a file claims past 2^31-1 is refused, not wrapped (2^40 was
  // read as 0, 2^32+1 as 1).
  void testRanksPastIntAreRefused_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<qint64>("value");
    QTest::newRow("rank 2^40") << QString("rank") << (qint64(1) << 40);
    QTest::newRow("rank 2^32+1") << QString("rank") << (qint64(1) << 32) + 1;
    QTest::newRow("rank -2") << QString("rank") << qint64(-2);
    QTest::newRow("world_size 2^31") << QString("world_size") << (qint64(1) << 31);
  }
  void testRanksPastIntAreRefused() {
    QFETCH(QString, key);
    QFETCH(qint64, value);
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["distributedInfo"][key.toStdString()] = value;
    const QString file = write_file(tmp_.path(), "bigrank.json", QByteArray::fromStdString(trace.dump()));
    const QString error = import_error({file.toStdString()}, (tmp_.path() + "/bigrank.ddprun").toStdString());
    QVERIFY2(error.contains(QString("distributedInfo's %1 %2, outside 0..2147483647").arg(key).arg(value)) &&
                 error.contains("near byte"),
             qPrintable(error));
  }

  // A huge string is refused at a bounded cost, naming the file and the byte: a 1 MiB+
  // name, and a 64 MiB string in a gzip of a few hundred kB (a 2 GB one took 10.6 GB).
  void testHugeStringsAreRefusedInBoundedMemory() {
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["traceEvents"][5]["name"] = std::string((1 << 20) + 1, 'n');
    QString file = write_file(tmp_.path(), "longname.json", QByteArray::fromStdString(trace.dump()));
    QString error = import_error({file.toStdString()}, (tmp_.path() + "/longname.ddprun").toStdString());
    QVERIFY2(error.contains("an event's name of 1048577 bytes (over 1 MiB) near byte"), qPrintable(error));
    trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["traceEvents"][5]["args"]["Call stack"] = "PLACEHOLDER";
    const std::string text = trace.dump();
    const size_t at = text.find("PLACEHOLDER");
    const QString gz = tmp_.path() + "/bomb.json.gz";
    gzFile f = gzopen(gz.toStdString().c_str(), "wb9");
    gzwrite(f, text.data(), static_cast<unsigned>(at));
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 64; ++i)
      gzwrite(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    gzwrite(f, text.data() + at + 11, static_cast<unsigned>(text.size() - at - 11));
    gzclose(f);
    QVERIFY(QFileInfo(gz).size() < 2 * 1024 * 1024);
    const long before = peak_rss_kb();
    error = import_error({gz.toStdString()}, (tmp_.path() + "/bomb.ddprun").toStdString());
    QVERIFY2(error.contains("holds a string over 16 MiB near byte"), qPrintable(error));
    QVERIFY2(peak_rss_kb() - before < 48 * 1024, qPrintable(QString::number(peak_rss_kb() - before)));
  }

  // Names kept once per thread or op are labels: over 1 KiB is refused, naming the byte
  // (8 KiB names of 65,000 threads made 1.2 GB in the app).
  void testLongLabelsAreRefused_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("words");
    QTest::newRow("thread name") << "thread_name"
                                 << "a thread or process name of 1025 bytes (over 1 KiB) near byte";
    QTest::newRow("group name") << "Process Group Name"
                                << "a process group name of 1025 bytes (over 1 KiB) near byte";
  }
  void testLongLabelsAreRefused() {
    QFETCH(QString, field);
    QFETCH(QString, words);
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    const std::string label(1025, 'l');
    if (field == "thread_name") {
      trace["traceEvents"].push_back(
          {{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 2}, {"args", {{"name", label}}}});
    } else {
      trace["traceEvents"][5]["args"][field.toStdString()] = label;
    }
    const QString file = write_file(tmp_.path(), "label.json", QByteArray::fromStdString(trace.dump()));
    const QString error = import_error({file.toStdString()}, (tmp_.path() + "/label.ddprun").toStdString());
    QVERIFY2(error.contains(words) && error.contains("label.json"), qPrintable(error));
  }

  // Events that repeat their times and ids pack into almost nothing: a run of them would
  // be refused when opened, so the import refuses them (issue 49), leaving no file.
  void testEventsThatPackTooDenselyAreRefused() {
    std::string text = R"({"schemaVersion": 1, "traceEvents": [)";
    for (int i = 0; i < 300000; ++i)
      text += R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":1},)";
    text += R"({"ph": "X", "cat": "cpu_op", "name": "end", "pid": 1, "tid": 1, "ts": 2, "dur": 1}]})";
    const QString file = write_file(tmp_.path(), "dense_events_rank0.json", QByteArray::fromStdString(text));
    const QString out = tmp_.path() + "/dense_events_rank0.ddprun";
    const QString error = import_error({file.toStdString()}, out.toStdString());
    QVERIFY2(error.contains("300002 events that pack into") && error.contains("more than one per 2 bytes"),
             qPrintable(error));
    QVERIFY(!QFileInfo::exists(out) && !QFileInfo::exists(out + ".importing"));
  }

  // A gzip bomb (a few hundred kB inflating to 200 MB of events) is refused once it
  // inflates past 64 times its size: memory follows what is read (issue 49).
  void testAGzipBombIsRefused() {
    const QString gz = tmp_.path() + "/bomb_events.json.gz";
    gzFile f = gzopen(gz.toStdString().c_str(), "wb9");
    const std::string head = R"({"schemaVersion": 1, "traceEvents": [)";
    gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
    const std::string event =
        R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 1},)";
    std::string chunk;
    for (int i = 0; i < 10000; ++i)
      chunk += event;
    for (int i = 0; i < 200; ++i)
      gzwrite(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    const std::string tail = R"({"ph": "X", "cat": "cpu_op", "name": "end", "pid": 1, "tid": 1, "ts": 2, "dur": 1}]})";
    gzwrite(f, tail.data(), static_cast<unsigned>(tail.size()));
    gzclose(f);
    QVERIFY(QFileInfo(gz).size() < 4 * 1024 * 1024);
    const long before = peak_rss_kb();
    const QString error = import_error({gz.toStdString()}, (tmp_.path() + "/bomb_events.ddprun").toStdString());
    QVERIFY2(error.contains("inflates to more than 64 times") && error.contains("gzip bomb"), qPrintable(error));
    QVERIFY2(peak_rss_kb() - before < 256 * 1024, qPrintable(QString::number(peak_rss_kb() - before)));
  }

  // Bad input: each refused with a message naming the file and what to do, and no run
  // file (or partial one) left behind.
  void testBadInput_data() {
    QTest::addColumn<QString>("make");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not JSON") << "notjson"
                              << "is not JSON";
    QTest::newRow("empty") << "empty"
                           << "is empty";
    QTest::newRow("truncated") << "truncated"
                               << "is truncated";
    QTest::newRow("damaged gzip") << "badgz"
                                  << "damaged";
    QTest::newRow("JSON, not a trace") << "object"
                                       << "not a PyTorch profiler trace";
    QTest::newRow("no rank anywhere") << "norank"
                                      << "rename it with its rank";
    QTest::newRow("duplicate ranks") << "duplicate"
                                     << "are both rank 0";
    QTest::newRow("different jobs") << "jobs"
                                    << "different jobs";
    QTest::newRow("forms mixed") << "forms"
                                 << "different trace forms";
    QTest::newRow("empty folder") << "emptydir"
                                  << "holds no trace files";
    QTest::newRow("missing") << "missing"
                             << "no such file or folder";
  }
  void testBadInput() {
    QFETCH(QString, make);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString d = dir.path();
    const QString kineto = kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz";
    std::vector<std::string> in;
    auto gunzip = [&](const QString& path) {
      return QByteArray::fromStdString(nlohmann::json{{"traceEvents", load_trace(path)}}.dump());
    };
    QByteArray list = QByteArray(
        "[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2, "
        "\"tid\": 1, \"pid\": \"CPU functions\", \"args\": {}}]");
    if (make == "notjson") in = {write_file(d, "rank0.json", "hello, world").toStdString()};
    if (make == "empty") in = {write_file(d, "rank0.json", "").toStdString()};
    if (make == "truncated") {
      QFile f(list_dir_ + "/rank0.json");
      f.open(QIODevice::ReadOnly);
      in = {write_file(d, "rank0.json", f.readAll().left(50000)).toStdString()};
    }
    if (make == "badgz") {
      QFile f(kineto);
      f.open(QIODevice::ReadOnly);
      QByteArray bytes = f.readAll();
      for (int i = 2000; i < 2100; ++i)
        bytes[i] = char(bytes[i] ^ 0x5a);
      in = {write_file(d, "rank0.json.gz", bytes).toStdString()};
    }
    if (make == "object") in = {write_file(d, "rank0.json", "{\"loss\": [1, 2, 3]}").toStdString()};
    if (make == "norank") in = {write_file(d, "trace.json", list).toStdString()};
    if (make == "duplicate")
      in = {write_file(d, "a.rank0.json", list).toStdString(), write_file(d, "b.rank0.json", list).toStdString()};
    if (make == "jobs") {
      QByteArray other = gunzip(kineto);
      other.replace("\"world_size\":2", "\"world_size\":4");
      QVERIFY(!other.contains("\"world_size\":2"));
      auto j = nlohmann::json::parse(other.toStdString());
      j["distributedInfo"] = {{"backend", "gloo"}, {"rank", 1}, {"world_size", 4}};
      in = {kineto.toStdString(), write_file(d, "other.json", QByteArray::fromStdString(j.dump())).toStdString()};
    }
    if (make == "forms") in = {kineto.toStdString(), write_file(d, "rank1.json", list).toStdString()};
    if (make == "emptydir") in = {d.toStdString()};
    if (make == "missing") in = {(d + "/nothing.json").toStdString()};
    const std::string out = (d + "/out.ddprun").toStdString();
    const QString error = import_error(in, out);
    QVERIFY2(error.contains(expected), qPrintable(error));
    if (make != "emptydir" && make != "jobs" && make != "forms" && make != "duplicate")
      QVERIFY2(error.contains(QString::fromStdString(in.back())), qPrintable(error));
    QVERIFY(!QFile::exists(QString::fromStdString(out)));
    QVERIFY(!QFile::exists(QString::fromStdString(out) + ".importing"));
  }

  // An existing run is kept unless --force; the output is never one of the inputs.
  void testOutputIsProtected() {
    QTemporaryDir dir;
    const QString out = dir.path() + "/run.ddprun";
    write_file(dir.path(), "run.ddprun", "keep me");
    const std::string in = (kFixtures + "/kineto_cuda_nccl_1").toStdString();
    QVERIFY(import_error({in}, out.toStdString()).contains("pass --force"));
    QFile f(out);
    f.open(QIODevice::ReadOnly);
    QCOMPARE(f.readAll(), QByteArray("keep me"));
    f.close();
    import_torch_traces({in}, out.toStdString(), {.force = true});
    QCOMPARE(RunStoreReader(out.toStdString()).run().world_size, 1);
    const std::string trace = (kFixtures + "/kineto_cuda_nccl_1/rank0.json.gz").toStdString();
    QVERIFY(import_error({trace}, trace).contains("is one of the traces"));
  }

  void testRankFromFileName_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("rank");
    QTest::newRow("rank0.json") << "rank0.json" << 0;
    QTest::newRow("rank-3") << "dir/rank-3.json.gz" << 3;
    QTest::newRow("rank_12") << "job_rank_12.json" << 12;
    QTest::newRow("tensorboard") << "rank1.1795558370312105505.pt.trace.json.gz" << 1;
    QTest::newRow("tensorboard's samples") << "worker0.pt.trace.json" << 0;
    QTest::newRow("worker_3") << "logs/worker_3.1795558370312105505.pt.trace.json.gz" << 3;
    QTest::newRow("host_pid (no rank in it)") << "node17_4242.1795558370312105505.pt.trace.json" << -1;
    QTest::newRow("more digits than a rank has") << "rank12345678901.json" << -1;
    QTest::newRow("none") << "trace.json" << -1;
  }
  void testRankFromFileName() {
    QFETCH(QString, name);
    QFETCH(int, rank);
    QCOMPARE(rank_from_file_name(name.toStdString()), rank);
  }
};

QTEST_GUILESS_MAIN(TestTorchImport)
#include "tst_torch_import.moc"
