#include "gpu_time.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "overlap_analysis.h"

namespace ddpscope::probes {
namespace {

constexpr double kMs = 1e-6;

struct Kernels {
  std::vector<Interval> computation, communication, memory;
  int64_t count = 0;
};

double ms(int64_t ns) { return static_cast<double>(ns) * kMs; }

// Intersection length of two merged interval lists.
int64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  return total_length(a) - total_length(subtract_intervals(a, b));
}

GpuTimeSplit split(int rank, int64_t iteration, Kernels k) {
  GpuTimeSplit s;
  s.rank = rank;
  s.iteration = iteration;
  s.kernels = k.count;
  const auto comp = merge_intervals(std::move(k.computation));
  const auto comm = merge_intervals(std::move(k.communication));
  const auto mem = merge_intervals(std::move(k.memory));
  std::vector<Interval> all = comp;
  all.insert(all.end(), comm.begin(), comm.end());
  all.insert(all.end(), mem.begin(), mem.end());
  const auto busy = merge_intervals(std::move(all));
  if (!busy.empty()) s.span_ms = ms(busy.back().end - busy.front().begin);
  s.busy_ms = ms(total_length(busy));
  s.idle_ms = s.span_ms - s.busy_ms;
  s.computation_ms = ms(total_length(comp));
  s.communication_ms = ms(total_length(comm));
  s.memory_ms = ms(total_length(mem));
  s.comm_overlapping_compute_ms = ms(overlap_length(comm, comp));
  s.overlap_ratio = s.communication_ms > 0 ? s.comm_overlapping_compute_ms / s.communication_ms : NAN;
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::ordered_json number(double v) {
  return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}

nlohmann::ordered_json split_json(const GpuTimeSplit& s) {
  nlohmann::ordered_json j = {{"rank", s.rank}};
  if (s.iteration >= 0) j["iteration"] = s.iteration;
  j["kernels"] = s.kernels;
  j["span_ms"] = s.span_ms;
  j["computation_ms"] = s.computation_ms;
  j["communication_ms"] = s.communication_ms;
  j["memory_ms"] = s.memory_ms;
  j["idle_ms"] = s.idle_ms;
  j["busy_ms"] = s.busy_ms;
  j["comm_overlapping_compute_ms"] = s.comm_overlapping_compute_ms;
  j["overlap_ratio"] = number(s.overlap_ratio);
  return j;
}

}  // namespace

GpuTimeBreakdown gpu_time_breakdown(RunStoreReader& run, double min_fraction) {
  std::map<int, Kernels> per_rank;
  std::map<std::pair<int, int64_t>, Kernels> per_iteration;
  run.for_each_span(
      [&](const CompactSpan& s) {
        const Interval i{s.t_begin_ns, s.t_end_ns};
        auto add = [&](Kernels& k) {
          ++k.count;
          if (s.kind == Kind::GpuComm)
            k.communication.push_back(i);
          else if (s.kind == Kind::GpuKernel)
            k.computation.push_back(i);
          else
            k.memory.push_back(i);
        };
        add(per_rank[s.rank]);
        if (s.iteration >= 0) add(per_iteration[{s.rank, s.iteration}]);
      },
      {Kind::GpuKernel, Kind::GpuComm, Kind::GpuMemcpy, Kind::GpuMemset});
  GpuTimeBreakdown b;
  for (auto& [rank, k] : per_rank)
    b.ranks.push_back(split(rank, -1, std::move(k)));
  std::map<int64_t, std::vector<const GpuTimeSplit*>> by_iteration;
  for (auto& [key, k] : per_iteration)
    b.iterations.push_back(split(key.first, key.second, std::move(k)));
  for (const GpuTimeSplit& s : b.iterations)
    by_iteration[s.iteration].push_back(&s);
  for (const auto& [iteration, rows] : by_iteration) {
    if (rows.size() < 2) continue;
    const GpuTimeSplit* slowest = *std::max_element(
        rows.begin(), rows.end(), [](auto* a, auto* b) { return a->computation_ms < b->computation_ms; });
    std::vector<double> others, spans;
    for (const auto* r : rows) {
      spans.push_back(r->span_ms);
      if (r != slowest) others.push_back(r->computation_ms);
    }
    const double lag = slowest->computation_ms - median(others);
    if (lag < min_fraction * median(spans)) continue;
    b.stragglers.push_back({iteration, slowest->rank, slowest->computation_ms, median(others), lag});
  }
  return b;
}

nlohmann::ordered_json gpu_time_json(const GpuTimeBreakdown& b, bool with_iterations) {
  if (b.empty()) return nullptr;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const auto& s : b.ranks)
    ranks.push_back(split_json(s));
  nlohmann::ordered_json out = {{"definitions", "HTA's kernel classes and times: README, 'GPU time'"},
                                {"ranks", ranks}};
  if (with_iterations) {
    nlohmann::ordered_json iterations = nlohmann::ordered_json::array();
    for (const auto& s : b.iterations)
      iterations.push_back(split_json(s));
    out["iterations"] = iterations;
  }
  nlohmann::ordered_json stragglers = nlohmann::ordered_json::array();
  for (const auto& s : b.stragglers)
    stragglers.push_back({{"iteration", s.iteration},
                          {"rank", s.rank},
                          {"computation_ms", s.computation_ms},
                          {"others_median_computation_ms", s.others_median_ms},
                          {"lag_ms", s.lag_ms}});
  out["stragglers"] = stragglers;
  return out;
}

}  // namespace ddpscope::probes
