// What the PyTorch-import tests share: the fixtures, the traces read by another parser
// (nlohmann through zlib) as the reference, and small file helpers.
#pragma once

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

namespace torch_import_test {

using namespace ddpscope::probes;

inline const QString kFixtures = QStringLiteral(DDPSCOPE_TORCH_FIXTURES);

// The whole trace, read with another parser (nlohmann, through zlib): the reference.
inline nlohmann::json load_trace_object(const QString& path) {
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
inline nlohmann::json load_trace(const QString& path) {
  nlohmann::json j = load_trace_object(path);
  return j.is_array() ? j : j["traceEvents"];
}

// ProfilerStep#N -> duration in ns, as the trace says (CPU rows only).
inline std::map<int64_t, int64_t> profiler_steps(const QString& path) {
  std::map<int64_t, int64_t> steps;
  for (const auto& e : load_trace(path)) {
    const std::string name = e.value("name", "");
    if (name.rfind("ProfilerStep#", 0) == 0 && e.value("cat", "") != "gpu_user_annotation")
      steps[std::stoll(name.substr(13))] = std::llround(e["dur"].get<double>() * 1000.0);
  }
  return steps;
}

// The process's peak resident memory so far (VmHWM), in kB.
inline long peak_rss_kb() {
  QFile f("/proc/self/status");
  f.open(QIODevice::ReadOnly);
  for (const QByteArray& line : f.readAll().split('\n'))
    if (line.startsWith("VmHWM:")) return line.mid(6).trimmed().split(' ').front().toLong();
  return 0;
}

inline QString write_file(const QString& dir, const QString& name, const QByteArray& bytes) {
  const QString path = dir + "/" + name;
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write(bytes);
  return path;
}

// The error import_torch_traces throws, or "" when it succeeds.
inline QString import_error(const std::vector<std::string>& in, const std::string& out) {
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

inline QString write_kineto_trace(const QString& dir, int rank, const std::vector<TestKernel>& kernels,
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

inline int64_t merged_length(std::vector<std::pair<int64_t, int64_t>> v) {
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

inline ReferenceGpuTime reference_gpu_time(const QString& path) {
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

// Step 1 of the GPU-definitions trace: computation, NCCL, a copy, gaps (us).
inline std::vector<TestKernel> step1_kernels() {
  const char* nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  return {{1, "kernel", "ampere_sgemm_128x64_nn", 7, 10, 20},
          {1, "kernel", "vectorized_elementwise_kernel", 8, 15, 25},
          {1, "kernel", nccl, 20, 22, 30},
          {1, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 7, 40, 42},
          {1, "kernel", "reduce_kernel", 7, 80, 81},
          {1, "kernel", "late_elementwise_kernel", 8, 90, 91, 80}};
}

// Imports into `folder` a 2-rank Kineto trace made to show each GPU-time definition: NCCL
// kernels overlapping computation on another stream, a copy, idle gaps of each cause, and
// in step 2 a rank whose computation is slower (the straggler). The tests work every
// figure out by hand from the kernels' times (us). Returns the run file.
inline std::string write_gpu_definitions(const QString& folder) {
  const QString dir = folder + "/gpudefs";
  QDir().mkpath(dir);
  const char* nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  auto rank0 = step1_kernels(), rank1 = step1_kernels();
  rank0.push_back({2, "kernel", "ampere_sgemm_128x64_nn", 7, 110, 120});
  rank0.push_back({2, "kernel", nccl, 20, 120, 125});
  rank1.push_back({2, "kernel", "ampere_sgemm_128x64_nn", 7, 110, 140});
  rank1.push_back({2, "kernel", nccl, 20, 140, 142});
  write_kineto_trace(dir, 0, rank0);
  write_kineto_trace(dir, 1, rank1);
  const std::string out = (folder + "/gpudefs.ddprun").toStdString();
  import_torch_traces({dir.toStdString()}, out, {.force = true});
  return out;
}

// Writes into `folder` the traces of a real 2-rank gloo DDP job under Debian's torch 1.13
// (the list form), 3 steps; false when the job failed (its output is on the test's).
inline bool make_list_traces(const QString& folder) {
  QProcess p;
  p.setProcessChannelMode(QProcess::ForwardedChannels);
  p.start("/usr/bin/python3",
          {QStringLiteral(DDPSCOPE_TORCH_SCRIPTS) + "/make_torch_traces.py", folder, "--np", "2", "--steps", "3"});
  return p.waitForFinished(240000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

}  // namespace torch_import_test
