#include "overlap_analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "arrival_wait.h"

namespace ddpscope::probes {

std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end <= i.begin) continue;
    if (!out.empty() && i.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t total_length(const std::vector<Interval>& merged) {
  int64_t n = 0;
  for (const Interval& i : merged)
    n += i.end - i.begin;
  return n;
}

std::vector<Interval> subtract_intervals(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (const Interval& x : a) {
    int64_t cursor = x.begin;
    while (j < b.size() && b[j].end <= cursor)
      ++j;
    for (size_t k = j; k < b.size() && b[k].begin < x.end; ++k) {
      if (b[k].begin > cursor) out.push_back({cursor, b[k].begin});
      cursor = std::max(cursor, b[k].end);
    }
    if (cursor < x.end) out.push_back({cursor, x.end});
  }
  return out;
}

MergedKernels merge_kernel_classes(std::vector<Interval> computation, std::vector<Interval> communication,
                                   std::vector<Interval> memory) {
  MergedKernels m{merge_intervals(std::move(computation)),
                  merge_intervals(std::move(communication)),
                  merge_intervals(std::move(memory)),
                  {}};
  std::vector<Interval> all = m.computation;
  all.insert(all.end(), m.communication.begin(), m.communication.end());
  all.insert(all.end(), m.memory.begin(), m.memory.end());
  m.busy = merge_intervals(std::move(all));
  return m;
}

namespace {

constexpr double kMs = 1e-6;

struct IterationSpans {
  const CompactSpan* iteration = nullptr;
  int64_t first_rowid = 0;
  std::vector<Interval> forward, backward, optimizer, finalize, comm;
  std::vector<const CompactSpan*> allreduces, ready;
  std::vector<Interval> gpu_compute, gpu_comm, gpu_memory;  // kernels launched in it
};

// A rank's CUDA launches by thread, and its NCCL kernels by correlation: to find the
// kernel a bucket's allreduce launched.
struct Launches {
  std::map<std::pair<int, int>, std::vector<const CompactSpan*>> by_thread;  // (rank, thread)
  std::map<std::pair<int, int64_t>, const CompactSpan*> comm_kernel;         // (rank, correlation)

  // The first NCCL kernel launched from `s`'s thread while `s` ran.
  const CompactSpan* kernel_of(const CompactSpan& s) const {
    const auto list = by_thread.find({s.rank, s.thread});
    if (list == by_thread.end()) return nullptr;
    auto it = std::lower_bound(list->second.begin(), list->second.end(), s.t_begin_ns,
                               [](const CompactSpan* l, int64_t t) { return l->t_begin_ns < t; });
    for (; it != list->second.end() && (*it)->t_begin_ns <= s.t_end_ns; ++it) {
      const auto k = comm_kernel.find({s.rank, (*it)->msg_id});
      if (k != comm_kernel.end()) return k->second;
    }
    return nullptr;
  }
};

// The figures from the GPU's kernels (the top of overlap_analysis.h).
void take_gpu_figures(IterationAnalysis& a, IterationSpans& it) {
  a.cpu_compute_ms = a.compute_ms;
  a.cpu_comm_ms = a.comm_ms;
  a.cpu_exposed_comm_ms = a.exposed_comm_ms;
  a.cpu_overlap_ratio = a.overlap_ratio;
  if (it.gpu_compute.empty() && it.gpu_comm.empty() && it.gpu_memory.empty()) return;
  a.from_gpu = true;
  const MergedKernels k =
      merge_kernel_classes(std::move(it.gpu_compute), std::move(it.gpu_comm), std::move(it.gpu_memory));
  const auto& compute = k.computation;
  const auto& comm = k.communication;
  const auto& busy = k.busy;
  a.gpu_span_ms = (busy.back().end - busy.front().begin) * kMs;
  a.gpu_idle_ms = a.gpu_span_ms - total_length(busy) * kMs;
  a.gpu_memory_ms = total_length(k.memory) * kMs;
  a.compute_ms = total_length(compute) * kMs;
  a.comm_ms = total_length(comm) * kMs;
  a.exposed = subtract_intervals(comm, compute);
  a.exposed_comm_ms = total_length(a.exposed) * kMs;
  a.overlap_ratio = a.comm_ms > 0 ? 1.0 - a.exposed_comm_ms / a.comm_ms : std::nan("");
}

}  // namespace

namespace {

using IterationKey = std::pair<int, int64_t>;  // (rank, iteration)

// Without names: a plain scan of the few kinds the analysis needs (a 1M-span run in ~0.1 s).
std::vector<CompactSpan> read_spans(RunStoreReader& run, int rank, int64_t after_rowid) {
  std::vector<CompactSpan> spans;
  run.for_each_span([&](const CompactSpan& s) { spans.push_back(s); },
                    {Kind::Iteration, Kind::Forward, Kind::Backward, Kind::Optimizer, Kind::Allreduce, Kind::Finalize,
                     Kind::BucketReady, Kind::ParamSync, Kind::GpuKernel, Kind::GpuComm, Kind::GpuMemcpy,
                     Kind::GpuMemset, Kind::CudaRuntime},
                    rank, after_rowid);
  return spans;
}

// Points into `spans`, which must stay put while the result is used.
Launches index_launches(const std::vector<CompactSpan>& spans) {
  Launches launches;
  for (const CompactSpan& s : spans) {
    if (s.kind == Kind::CudaRuntime && s.msg_id >= 0) launches.by_thread[{s.rank, s.thread}].push_back(&s);
    if (s.kind == Kind::GpuComm && s.msg_id >= 0) launches.comm_kernel[{s.rank, s.msg_id}] = &s;
  }
  for (auto& [key, list] : launches.by_thread)
    std::stable_sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->t_begin_ns < b->t_begin_ns; });
  return launches;
}

// The spans sorted into their iterations. Points into `spans`, as above.
std::map<IterationKey, IterationSpans> group_by_iteration(const std::vector<CompactSpan>& spans) {
  std::map<IterationKey, IterationSpans> by_iteration;
  for (const CompactSpan& s : spans) {
    if (s.iteration < 0 || s.kind == Kind::CudaRuntime) continue;
    IterationSpans& it = by_iteration[{s.rank, s.iteration}];
    if (it.first_rowid == 0) it.first_rowid = s.rowid;
    const Interval iv{s.t_begin_ns, s.t_end_ns};
    switch (s.kind) {
      case Kind::Iteration: it.iteration = &s; break;
      case Kind::Forward: it.forward.push_back(iv); break;
      case Kind::Backward: it.backward.push_back(iv); break;
      case Kind::Optimizer: it.optimizer.push_back(iv); break;
      case Kind::Finalize: it.finalize.push_back(iv); break;
      case Kind::Allreduce:
        it.comm.push_back(iv);
        it.allreduces.push_back(&s);
        break;
      case Kind::ParamSync: it.comm.push_back(iv); break;  // ZeRO's post-step broadcasts
      case Kind::BucketReady: it.ready.push_back(&s); break;
      case Kind::GpuKernel: it.gpu_compute.push_back(iv); break;
      case Kind::GpuComm: it.gpu_comm.push_back(iv); break;
      case Kind::GpuMemcpy:
      case Kind::GpuMemset: it.gpu_memory.push_back(iv); break;
      default: break;
    }
  }
  return by_iteration;
}

// The CPU's figures of a finished iteration (the top of overlap_analysis.h); `finalize`
// is its finalize spans, merged.
IterationAnalysis cpu_figures(const IterationKey& key, const IterationSpans& it,
                              const std::vector<Interval>& finalize) {
  IterationAnalysis a;
  a.rank = key.first;
  a.iteration = key.second;
  a.t_begin_ns = it.iteration->t_begin_ns;
  a.t_end_ns = it.iteration->t_end_ns;
  a.iteration_ms = (a.t_end_ns - a.t_begin_ns) * kMs;
  a.forward_ms = total_length(merge_intervals(it.forward)) * kMs;
  a.backward_ms = total_length(subtract_intervals(merge_intervals(it.backward), finalize)) * kMs;
  a.optimizer_ms = total_length(merge_intervals(it.optimizer)) * kMs;
  std::vector<Interval> compute = it.forward;
  compute.insert(compute.end(), it.backward.begin(), it.backward.end());
  const auto compute_merged = subtract_intervals(merge_intervals(compute), finalize);
  const auto comm = merge_intervals(it.comm);
  a.compute_ms = total_length(compute_merged) * kMs;
  a.comm_ms = total_length(comm) * kMs;
  a.exposed = subtract_intervals(comm, compute_merged);
  a.exposed_comm_ms = total_length(a.exposed) * kMs;
  a.overlap_ratio = a.comm_ms > 0 ? 1.0 - a.exposed_comm_ms / a.comm_ms : std::nan("");
  return a;
}

// Each DDP bucket's allreduce in iteration `a`, timed by the NCCL kernel it launched
// where there is one, appended to `out` by bucket.
void add_bucket_timings(const IterationAnalysis& a, const IterationSpans& it, const Launches& launches,
                        int64_t finalize_begin, std::vector<BucketTiming>& out) {
  std::map<int64_t, BucketTiming> buckets;
  for (const CompactSpan* s : it.allreduces) {
    if (s->bucket < 0) continue;
    BucketTiming& b = buckets[s->bucket];
    b.rank = a.rank;
    b.iteration = a.iteration;
    b.bucket = static_cast<int>(s->bucket);
    b.bytes = s->bytes;
    b.start_ns = s->t_begin_ns;
    b.end_ns = s->t_end_ns;
    if (const CompactSpan* k = launches.kernel_of(*s)) {
      b.start_ns = k->t_begin_ns;
      b.end_ns = k->t_end_ns;
      b.gpu = true;
    }
    b.wait_ms = std::max<int64_t>(0, b.end_ns - std::max(finalize_begin, b.start_ns)) * kMs;
  }
  for (const CompactSpan* s : it.ready) {
    if (auto b = buckets.find(s->bucket); b != buckets.end()) b->second.ready_ns = s->t_begin_ns;
  }
  for (auto& [index, b] : buckets)
    out.push_back(b);
}

// The analysis of the iterations whose rows all come after `after_rowid`.
RunAnalysis analyze_rows(RunStoreReader& run, int rank, int64_t after_rowid) {
  const std::vector<CompactSpan> spans = read_spans(run, rank, after_rowid);
  // The spans stay put from here on: pointers into them hold.
  const Launches launches = index_launches(spans);
  std::map<IterationKey, IterationSpans> by_iteration = group_by_iteration(spans);
  RunAnalysis out;
  out.resume_rowid = spans.empty() ? after_rowid + 1 : spans.back().rowid + 1;
  for (auto& [key, it] : by_iteration) {
    if (!it.iteration) {
      // An unfinished iteration (the run is still going): read again from its first row.
      out.resume_rowid = std::min(out.resume_rowid, it.first_rowid);
      continue;
    }
    if (it.iteration->ended_by_error) {
      // Its time is the wait that failed, not an iteration: averaged in, it named the
      // rank that waited (5 s) the slowest instead of the one it waited for.
      out.cut_short.push_back({key.first, key.second, it.iteration->t_begin_ns, it.iteration->t_end_ns});
      continue;
    }
    const auto finalize = merge_intervals(it.finalize);
    IterationAnalysis a = cpu_figures(key, it, finalize);
    take_gpu_figures(a, it);
    out.iterations.push_back(a);
    const int64_t finalize_begin = finalize.empty() ? a.t_end_ns : finalize.front().begin;
    add_bucket_timings(a, it, launches, finalize_begin, out.buckets);
  }
  return out;
}

}  // namespace

std::map<int, RankSums> rank_sums(const RunAnalysis& analysis, const std::set<int64_t>& leave_out) {
  std::map<int, RankSums> sums;
  for (const IterationAnalysis& it : analysis.iterations) {
    if (is_warm_up(analysis, it) || leave_out.count(it.iteration)) continue;
    RankSums& s = sums[it.rank];
    ++s.n;
    s.gpu = s.gpu || it.from_gpu;
    s.iteration += it.iteration_ms;
    s.compute += it.compute_ms;
    s.comm += it.comm_ms;
    s.exposed += it.exposed_comm_ms;
    s.cpu_comm += it.from_gpu ? it.cpu_comm_ms : it.comm_ms;
    s.cpu_exposed += it.from_gpu ? it.cpu_exposed_comm_ms : it.exposed_comm_ms;
    s.gpu_idle += it.gpu_idle_ms;
    if (it.wait_known) {
      ++s.wait_n;
      s.exposed_wait += it.exposed_wait_ms;
      s.exposed_transfer += it.exposed_transfer_ms;
    }
  }
  return sums;
}

bool is_warm_up(const RunAnalysis& analysis, const IterationAnalysis& it) {
  // Iterations are by rank, then iteration: the rank's rows are one run of them.
  const auto& rows = analysis.iterations;
  const auto first = std::lower_bound(rows.begin(), rows.end(), it.rank,
                                      [](const IterationAnalysis& x, int rank) { return x.rank < rank; });
  const auto end =
      std::partition_point(first, rows.end(), [&](const IterationAnalysis& x) { return x.rank == it.rank; });
  return end - first >= 3 && first->iteration == it.iteration;
}

RunAnalysis analyze_run(RunStoreReader& run, int rank) {
  if (rank >= 0) return analyze_rows(run, rank, 0);
  // Rank by rank: the spans held at once are one rank's (a 64-rank run of 100M spans held
  // 6M structure spans, 620 MB, when read at once). Each rank's packs come through the
  // rank index. The resume point is the earliest of the ranks': safe, as extend_analysis
  // keeps the iterations it already has.
  RunAnalysis all;
  bool any = false;
  for (const RankRow& r : run.ranks()) {
    RunAnalysis one = analyze_rows(run, r.rank, 0);
    if (one.iterations.empty() && one.cut_short.empty() && one.resume_rowid <= 1) continue;  // no spans
    all.iterations.insert(all.iterations.end(), one.iterations.begin(), one.iterations.end());
    all.cut_short.insert(all.cut_short.end(), one.cut_short.begin(), one.cut_short.end());
    all.buckets.insert(all.buckets.end(), one.buckets.begin(), one.buckets.end());
    all.resume_rowid = any ? std::min(all.resume_rowid, one.resume_rowid) : one.resume_rowid;
    any = true;
  }
  if (!any) all = analyze_rows(run, -1, 0);  // no ranks table rows (an imported or older file)
  split_wait_and_transfer(all, run.run().world_size);
  return all;
}

void extend_analysis(RunAnalysis& a, RunStoreReader& run) {
  RunAnalysis fresh = analyze_rows(run, -1, a.resume_rowid - 1);
  // Iterations finished before may show up again from a partial set of rows (another
  // rank's rows interleave): the earlier, complete result stays.
  std::set<std::pair<int, int64_t>> known;
  for (const auto& it : a.iterations)
    known.insert({it.rank, it.iteration});
  for (auto& it : fresh.iterations) {
    if (!known.count({it.rank, it.iteration})) a.iterations.push_back(std::move(it));
  }
  for (auto& b : fresh.buckets) {
    if (!known.count({b.rank, b.iteration})) a.buckets.push_back(b);
  }
  for (const auto& c : fresh.cut_short) {
    const bool seen = std::any_of(a.cut_short.begin(), a.cut_short.end(), [&](const CutShortIteration& x) {
      return x.rank == c.rank && x.iteration == c.iteration;
    });
    if (!seen) a.cut_short.push_back(c);
  }
  std::stable_sort(a.iterations.begin(), a.iterations.end(), [](const auto& x, const auto& y) {
    return std::pair(x.rank, x.iteration) < std::pair(y.rank, y.iteration);
  });
  std::stable_sort(a.buckets.begin(), a.buckets.end(), [](const auto& x, const auto& y) {
    return std::tuple(x.rank, x.iteration, x.bucket) < std::tuple(y.rank, y.iteration, y.bucket);
  });
  a.resume_rowid = std::max(a.resume_rowid, fresh.resume_rowid);
  split_wait_and_transfer(a, run.run().world_size);  // a bucket just reduced by its last rank completes earlier ones
}

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double longest(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// The GPU rule: the rank whose computation kernels took longest.
void gpu_stragglers(const RunAnalysis& analysis, double min_fraction, std::vector<Straggler>& out) {
  std::map<int64_t, std::vector<const IterationAnalysis*>> by_iteration;
  for (const IterationAnalysis& it : analysis.iterations)
    if (it.from_gpu) by_iteration[it.iteration].push_back(&it);
  for (const auto& [iteration, rows] : by_iteration) {
    if (rows.size() < 2) continue;
    const IterationAnalysis* slowest =
        *std::max_element(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->compute_ms < b->compute_ms; });
    std::vector<double> others, times;
    for (const auto* r : rows) {
      times.push_back(r->iteration_ms);
      if (r != slowest) others.push_back(r->compute_ms);
    }
    const double lag = slowest->compute_ms - median_of(others);
    if (lag <= 0 || lag < min_fraction * longest(times)) continue;
    out.push_back({iteration, slowest->rank, lag, true, slowest->compute_ms, median_of(others)});
  }
}

}  // namespace

std::vector<Straggler> find_stragglers(const RunAnalysis& analysis, double min_fraction) {
  std::vector<Straggler> out;
  gpu_stragglers(analysis, min_fraction, out);
  std::map<int64_t, std::vector<double>> iteration_ms;
  std::set<int64_t> on_gpu;
  for (const IterationAnalysis& it : analysis.iterations) {
    iteration_ms[it.iteration].push_back(it.iteration_ms);
    if (it.from_gpu) on_gpu.insert(it.iteration);
  }
  // (iteration, rank) -> the rank's first allreduce start in that iteration.
  std::map<int64_t, std::map<int, int64_t>> first_start;
  for (const BucketTiming& b : analysis.buckets) {
    if (on_gpu.count(b.iteration)) continue;  // the GPU rule judged it
    auto [it, inserted] = first_start[b.iteration].try_emplace(b.rank, b.start_ns);
    if (!inserted) it->second = std::min(it->second, b.start_ns);
  }
  for (const auto& [iteration, ranks] : first_start) {
    if (ranks.size() < 2) continue;
    const auto [lo, hi] = std::minmax_element(ranks.begin(), ranks.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; });
    const double lag_ms = (hi->second - lo->second) / 1e6;
    if (lag_ms > 0 && lag_ms >= min_fraction * longest(iteration_ms[iteration])) {
      out.push_back({iteration, hi->first, lag_ms});
    }
  }
  std::sort(out.begin(), out.end(), [](const Straggler& a, const Straggler& b) { return a.iteration < b.iteration; });
  return out;
}

}  // namespace ddpscope::probes
