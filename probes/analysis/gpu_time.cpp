#include "gpu_time.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "overlap_analysis.h"

namespace ddpscope::probes {
namespace {

constexpr double kNsToMs = 1e-6;
// HTA's default consecutive_kernel_delay: 30 in its trace's unit, microseconds.
constexpr int64_t kKernelWaitNs = 30'000;

struct GpuRow {
  int64_t begin = 0, end = 0;
  Kind kind = Kind::GpuKernel;
  int thread = 0;
  int64_t correlation = -1;
};

struct Kernels {
  std::vector<Interval> computation, communication, memory;
  int64_t count = 0;
  void add(const GpuRow& r) {
    ++count;
    const Interval i{r.begin, r.end};
    if (r.kind == Kind::GpuComm)
      communication.push_back(i);
    else if (r.kind == Kind::GpuKernel)
      computation.push_back(i);
    else
      memory.push_back(i);
  }
};

double ms(int64_t ns) { return static_cast<double>(ns) * kNsToMs; }

// Intersection length of two merged interval lists.
int64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  return total_length(a) - total_length(subtract_intervals(a, b));
}

// One iteration's figures, exact to the nanosecond.
GpuTimeSplit split(int rank, int64_t iteration, Kernels k) {
  GpuTimeSplit s;
  s.rank = rank;
  s.iteration = iteration;
  s.kernels = k.count;
  const MergedKernels merged =
      merge_kernel_classes(std::move(k.computation), std::move(k.communication), std::move(k.memory));
  const auto& comp = merged.computation;
  const auto& comm = merged.communication;
  const auto& mem = merged.memory;
  const auto& busy = merged.busy;
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

// HTA's merge (utils.merge_kernel_intervals): sorted by start, a new group where a start
// passes every earlier end. Rounding can leave a sub-microsecond kernel ending before it
// starts; HTA keeps such a group, and its negative length, so this does too.
std::vector<Interval> hta_merge(std::vector<Interval> v) {
  std::stable_sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  int64_t latest_end = INT64_MIN;
  for (const Interval& i : v) {
    if (out.empty() || i.begin > latest_end)
      out.push_back(i);
    else
      out.back().end = std::max(out.back().end, i.end);
    latest_end = std::max(latest_end, i.end);
  }
  return out;
}

int64_t hta_length(const std::vector<Interval>& merged) {
  int64_t n = 0;
  for (const Interval& i : merged)
    n += i.end - i.begin;
  return n;
}

// HTA's overlap sweep (communication_analysis.get_comm_comp_overlap): communication
// groups step a counter by 1, computation groups by 2; time at 3 is both at once.
int64_t hta_overlap(const std::vector<Interval>& comm, const std::vector<Interval>& comp) {
  struct Step {
    int64_t t;
    int delta;
  };
  std::vector<Step> steps;
  for (const auto& i : comm)
    steps.push_back({i.begin, 1});
  for (const auto& i : comm)
    steps.push_back({i.end, -1});
  for (const auto& i : comp)
    steps.push_back({i.begin, 2});
  for (const auto& i : comp)
    steps.push_back({i.end, -2});
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.t < b.t; });
  int64_t both = 0;
  int running = 0;
  for (size_t k = 0; k + 1 < steps.size(); ++k) {
    running += steps[k].delta;
    if (running == 3) both += steps[k + 1].t - steps[k].t;
  }
  return both;
}

// A rank's figures in HTA's window, by HTA's arithmetic (breakdown_analysis and
// communication_analysis).
GpuTimeSplit hta_split(int rank, const std::vector<GpuRow>& rows) {
  std::vector<Interval> comp, comm, mem, all;
  for (const GpuRow& r : rows) {
    const Interval i{r.begin, r.end};
    (r.kind == Kind::GpuComm ? comm : r.kind == Kind::GpuKernel ? comp : mem).push_back(i);
    all.push_back(i);
  }
  GpuTimeSplit s;
  s.rank = rank;
  s.kernels = static_cast<int64_t>(rows.size());
  const auto merged_all = hta_merge(all), merged_comp = hta_merge(comp), merged_comm = hta_merge(comm),
             merged_mem = hta_merge(mem);
  if (!merged_all.empty()) s.span_ms = ms(merged_all.back().end - merged_all.front().begin);
  s.busy_ms = ms(hta_length(merged_all));
  s.idle_ms = s.span_ms - s.busy_ms;
  s.computation_ms = ms(hta_length(merged_comp));
  s.communication_ms = ms(hta_length(merged_comm));
  s.memory_ms = ms(hta_length(merged_mem));
  s.comm_overlapping_compute_ms = ms(hta_overlap(merged_comm, merged_comp));
  s.overlap_ratio = s.communication_ms > 0 ? s.comm_overlapping_compute_ms / s.communication_ms : NAN;
  return s;
}

// HTA's idle-time breakdown (breakdown_analysis._analyze_idle_time_for_stream): each
// kernel's gap since the previous one on its stream, put down to the host when the
// kernel was launched after that previous one ended, to launch overhead when under 30 us.
std::vector<GpuStreamIdle> stream_idle(int rank, const std::vector<GpuRow>& rows,
                                       const std::unordered_map<int64_t, int64_t>& launches) {
  std::map<int, std::vector<const GpuRow*>> by_stream;
  for (const GpuRow& r : rows)
    by_stream[r.thread].push_back(&r);
  std::vector<GpuStreamIdle> out;
  for (auto& [thread, list] : by_stream) {
    std::stable_sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    GpuStreamIdle idle;
    idle.rank = rank;
    idle.thread = thread;
    idle.kernels = static_cast<int64_t>(list.size());
    for (size_t k = 1; k < list.size(); ++k) {
      const int64_t previous_end = list[k - 1]->end;
      const int64_t gap = list[k]->begin - previous_end;
      const auto launch = launches.find(list[k]->correlation);
      if (launch != launches.end() && launch->second > previous_end)
        idle.host_wait_ms += ms(gap);
      else if (gap < kKernelWaitNs)
        idle.kernel_wait_ms += ms(gap);
      else
        idle.other_ms += ms(gap);
    }
    out.push_back(idle);
  }
  return out;
}

// The stretches where none of the rank's streams ran anything, longest first.
std::vector<GpuGap> longest_gaps(int rank, const std::vector<GpuRow>& rows, size_t keep) {
  std::vector<Interval> all;
  for (const GpuRow& r : rows)
    all.push_back({r.begin, r.end});
  const auto busy = merge_intervals(std::move(all));
  std::vector<GpuGap> gaps;
  for (size_t k = 1; k < busy.size(); ++k)
    gaps.push_back({rank, busy[k - 1].end, busy[k].begin});
  const size_t n = std::min(keep, gaps.size());
  std::partial_sort(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(n), gaps.end(),
                    [](const GpuGap& a, const GpuGap& b) { return a.end_ns - a.begin_ns > b.end_ns - b.begin_ns; });
  gaps.resize(n);
  return gaps;
}

// Each stream's queue over time: +1 at a kernel's launch, -1 at its end (kernels whose
// launch is not in the trace are left out: when they joined the queue is unknown).
std::vector<GpuStreamQueue> stream_queues(int rank, const std::vector<GpuRow>& rows,
                                          const std::unordered_map<int64_t, int64_t>& launches) {
  struct Change {
    int64_t t;
    int delta;
  };
  std::map<int, std::vector<Change>> by_stream;
  for (const GpuRow& r : rows) {
    const auto launch = launches.find(r.correlation);
    if (launch == launches.end()) continue;
    auto& changes = by_stream[r.thread];
    changes.push_back({launch->second, 1});
    changes.push_back({std::max(r.end, launch->second), -1});
  }
  std::vector<GpuStreamQueue> out;
  for (auto& [thread, changes] : by_stream) {
    // Ends before launches at one instant: a kernel that ended as the next was launched
    // did not queue with it.
    std::sort(changes.begin(), changes.end(),
              [](const Change& a, const Change& b) { return a.t != b.t ? a.t < b.t : a.delta < b.delta; });
    GpuStreamQueue q{rank, thread};
    int64_t queued = 0;
    double area = 0;
    for (size_t k = 0; k < changes.size(); ++k) {
      queued += changes[k].delta;
      q.max_queued = std::max(q.max_queued, queued);
      if (k + 1 < changes.size())
        area += static_cast<double>(queued) * static_cast<double>(changes[k + 1].t - changes[k].t);
    }
    const int64_t length = changes.back().t - changes.front().t;
    q.mean_queued = length > 0 ? area / static_cast<double>(length) : 0;
    out.push_back(q);
  }
  return out;
}

int64_t floor_to_grid(int64_t t, int64_t origin) {
  const int64_t d = t - origin;
  return origin + (d >= 0 ? d / 1000 : -((-d + 999) / 1000)) * 1000;
}
int64_t ceil_to_grid(int64_t t, int64_t origin) { return -floor_to_grid(-t, -origin); }

// The rows HTA reads for a rank: launched before the last step began, when the job has
// two steps or more (a kernel whose launch is not in the trace is left out too), with
// times rounded to the trace's microseconds when it had finer ones.
std::vector<GpuRow> in_hta_window(std::vector<GpuRow> rows, const std::unordered_map<int64_t, int64_t>& launches,
                                  const GpuWindow& window, int rank) {
  const auto w = window.ranks.find(rank);
  if (w == window.ranks.end()) return rows;
  if (window.leave_out_last_step && w->second.last_step_begin_ns != INT64_MIN) {
    std::erase_if(rows, [&](const GpuRow& r) {
      const auto launch = launches.find(r.correlation);
      return launch == launches.end() || launch->second >= w->second.last_step_begin_ns;
    });
  }
  if (w->second.us_origin_ns >= 0) {
    for (GpuRow& r : rows) {
      r.begin = ceil_to_grid(r.begin, w->second.us_origin_ns);
      r.end = floor_to_grid(r.end, w->second.us_origin_ns);
    }
  }
  return rows;
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
  // HTA's percentages, to compare with its tables.
  const double span = s.span_ms > 0 ? s.span_ms : NAN;
  j["idle_pct"] = number(100 * s.idle_ms / span);
  j["computation_pct"] = number(100 * s.computation_ms / span);
  j["non_computation_pct"] = number(100 * (s.span_ms - s.computation_ms - s.idle_ms) / span);
  j["overlap_pct"] = number(100 * s.overlap_ratio);
  return j;
}

constexpr const char* kLeaveOutLastStep = "leave_out_last_step";
constexpr const char* kRanks = "ranks";
constexpr const char* kLastStepBegin = "last_step_begin_ns";
constexpr const char* kUsOrigin = "us_origin_ns";

}  // namespace

nlohmann::json gpu_window_json(const GpuWindow& w) {
  nlohmann::json ranks = nlohmann::json::object();
  for (const auto& [rank, r] : w.ranks) {
    nlohmann::json j = {{kUsOrigin, r.us_origin_ns}};
    j[kLastStepBegin] =
        r.last_step_begin_ns == INT64_MIN ? nlohmann::json(nullptr) : nlohmann::json(r.last_step_begin_ns);
    ranks[std::to_string(rank)] = j;
  }
  return {{kLeaveOutLastStep, w.leave_out_last_step}, {kRanks, ranks}};
}

GpuWindow gpu_window_from_config(const std::string& config_json) {
  GpuWindow w;
  const auto config = nlohmann::json::parse(config_json, nullptr, false);
  if (!config.is_object() || !config.contains("gpu_window") || !config["gpu_window"].is_object()) return w;
  const auto& j = config["gpu_window"];
  w.leave_out_last_step = j.value(kLeaveOutLastStep, false);
  if (!j.contains(kRanks) || !j[kRanks].is_object()) return w;
  for (const auto& [key, r] : j[kRanks].items()) {
    if (!r.is_object()) continue;
    GpuWindow::Rank rank;
    if (r.contains(kLastStepBegin) && r[kLastStepBegin].is_number_integer())
      rank.last_step_begin_ns = r[kLastStepBegin].get<int64_t>();
    if (r.contains(kUsOrigin) && r[kUsOrigin].is_number_integer()) rank.us_origin_ns = r[kUsOrigin].get<int64_t>();
    w.ranks[std::atoi(key.c_str())] = rank;
  }
  return w;
}

GpuTimeBreakdown gpu_time_breakdown(RunStoreReader& run, size_t gaps_per_rank) {
  const GpuWindow window = gpu_window_from_config(run.run().config_json);
  GpuTimeBreakdown b;
  for (const RankRow& rank_row : run.ranks()) {
    const int rank = rank_row.rank;
    std::vector<GpuRow> rows;
    std::map<int64_t, Kernels> per_iteration;
    run.for_each_span(
        [&](const CompactSpan& s) {
          const GpuRow r{s.t_begin_ns, s.t_end_ns, s.kind, s.thread, s.msg_id};
          rows.push_back(r);
          if (s.iteration >= 0) per_iteration[s.iteration].add(r);
        },
        {Kind::GpuKernel, Kind::GpuComm, Kind::GpuMemcpy, Kind::GpuMemset}, rank);
    if (rows.empty()) continue;
    std::unordered_map<int64_t, int64_t> launches;  // correlation -> when the CPU launched it
    run.for_each_span(
        [&](const CompactSpan& s) {
          if (s.msg_id >= 0) launches.emplace(s.msg_id, s.t_begin_ns);
        },
        {Kind::CudaRuntime}, rank);
    const auto gaps = longest_gaps(rank, rows, gaps_per_rank);
    b.longest_gaps.insert(b.longest_gaps.end(), gaps.begin(), gaps.end());
    const auto queues = stream_queues(rank, rows, launches);
    b.queues.insert(b.queues.end(), queues.begin(), queues.end());
    const std::vector<GpuRow> hta_rows = in_hta_window(std::move(rows), launches, window, rank);
    b.ranks.push_back(hta_split(rank, hta_rows));
    const auto idle = stream_idle(rank, hta_rows, launches);
    b.idle.insert(b.idle.end(), idle.begin(), idle.end());
    for (auto& [iteration, k] : per_iteration)
      b.iterations.push_back(split(rank, iteration, std::move(k)));
  }
  return b;
}

nlohmann::ordered_json gpu_time_json(const GpuTimeBreakdown& b, const std::vector<Straggler>& straggler_list,
                                     bool with_iterations) {
  if (b.empty()) return nullptr;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const auto& s : b.ranks)
    ranks.push_back(split_json(s));
  nlohmann::ordered_json out = {{"definitions", "HTA's kernel classes, window and arithmetic: docs/gpu.md, 'GPU time'"},
                                {"ranks", ranks}};
  nlohmann::ordered_json idle = nlohmann::ordered_json::array();
  for (const auto& s : b.idle)
    idle.push_back({{"rank", s.rank},
                    {"stream_thread", s.thread},
                    {"kernels", s.kernels},
                    {"host_wait_ms", s.host_wait_ms},
                    {"kernel_wait_ms", s.kernel_wait_ms},
                    {"other_ms", s.other_ms}});
  out["idle_by_stream"] = idle;
  nlohmann::ordered_json queues = nlohmann::ordered_json::array();
  for (const auto& q : b.queues)
    queues.push_back(
        {{"rank", q.rank}, {"stream_thread", q.thread}, {"max_queued", q.max_queued}, {"mean_queued", q.mean_queued}});
  out["queue_by_stream"] = queues;
  nlohmann::ordered_json gaps = nlohmann::ordered_json::array();
  for (const auto& g : b.longest_gaps)
    gaps.push_back({{"rank", g.rank}, {"begin_ns", g.begin_ns}, {"end_ns", g.end_ns}, {"ms", g.ms()}});
  out["longest_gaps"] = gaps;
  if (with_iterations) {
    nlohmann::ordered_json iterations = nlohmann::ordered_json::array();
    for (const auto& s : b.iterations)
      iterations.push_back(split_json(s));
    out["iterations"] = iterations;
  }
  nlohmann::ordered_json stragglers = nlohmann::ordered_json::array();
  for (const auto& s : straggler_list) {
    if (!s.gpu) continue;
    stragglers.push_back({{"iteration", s.iteration},
                          {"rank", s.rank},
                          {"computation_ms", s.computation_ms},
                          {"others_median_computation_ms", s.others_median_ms},
                          {"lag_ms", s.lag_ms}});
  }
  out["stragglers"] = stragglers;
  return out;
}

}  // namespace ddpscope::probes
