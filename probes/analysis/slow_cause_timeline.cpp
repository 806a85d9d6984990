#include "slow_cause_timeline.h"

#include "slow_cause_gpu.h"

#include <algorithm>
#include <limits>
#include <set>

namespace ddpscope::probes {
namespace {

constexpr double kNsToMsTimeline = 1e-6;

// The parts of `merged` inside [from, to].
std::vector<Interval> clip(const std::vector<Interval>& merged, int64_t from, int64_t to) {
  std::vector<Interval> out;
  auto it =
      std::lower_bound(merged.begin(), merged.end(), from, [](const Interval& i, int64_t t) { return i.end <= t; });
  for (; it != merged.end() && it->begin < to; ++it)
    out.push_back({std::max(it->begin, from), std::min(it->end, to)});
  return out;
}

int phase_of(Kind kind) {
  switch (kind) {
    case Kind::Forward: return 1;
    case Kind::Backward: return 2;
    case Kind::Optimizer: return 3;
    default: return -1;
  }
}

// The rank's spans sorted into its timeline (waits come with the matching).
void add_span(RankTimeline& r, const CompactSpan& s, std::set<int64_t>& cut_short) {
  if (s.kind == Kind::Iteration) {
    r.iterations.push_back({s.iteration, s.t_begin_ns, s.t_end_ns});
    if (s.ended_by_error) cut_short.insert(s.iteration);
  } else if (s.kind == Kind::GradReady) {
    r.ready.emplace_back(s.t_begin_ns, s.param);
  } else if (s.kind == Kind::PgOp) {
    if (s.seq >= 0)
      r.collectives.push_back({s.name_id, s.thread, s.seq, s.iteration, s.t_begin_ns, s.t_end_ns, s.bytes});
  } else if (const int p = phase_of(s.kind); p > 0) {
    r.phases[static_cast<size_t>(p)].push_back({s.t_begin_ns, s.t_end_ns});
  }
}

void finish_timeline(RankTimeline& r) {
  std::sort(r.iterations.begin(), r.iterations.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  std::sort(r.collectives.begin(), r.collectives.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  std::sort(r.ready.begin(), r.ready.end());
  // Backward's compute ends when its last gradient is ready; the rest is waiting for the
  // buckets' allreduces (finalize), which is communication, not backward.
  for (Interval& b : r.phases[2]) {
    auto last =
        std::upper_bound(r.ready.begin(), r.ready.end(), std::make_pair(b.end, std::numeric_limits<int64_t>::max()));
    if (last != r.ready.begin() && std::prev(last)->first >= b.begin) b.end = std::prev(last)->first;
  }
  std::vector<Interval> busy;
  for (auto& phase : r.phases) {
    phase = merge_intervals(std::move(phase));
    busy.insert(busy.end(), phase.begin(), phase.end());
  }
  for (const TimelineCollective& c : r.collectives)
    busy.push_back({c.begin, c.end});
  r.busy = merge_intervals(std::move(busy));
}

// The part of [from, to] in which the rank ran none of its phases, ms.
double idle_ms(const RankTimeline& r, int64_t from, int64_t to) {
  if (to <= from) return 0;
  std::vector<Interval> working;
  // On the GPU, its computation kernels (a kernel launched outside the phases is work too).
  for (size_t p = r.gpu ? 0 : 1; p < (r.gpu ? r.gpu_phases.size() : size_t{4}); ++p) {
    const std::vector<Interval> part = clip(r.gpu ? r.gpu_phases[p] : r.phases[p], from, to);
    working.insert(working.end(), part.begin(), part.end());
  }
  const std::vector<Interval> wait{{from, to}};
  return total_length(subtract_intervals(wait, merge_intervals(std::move(working)))) * kNsToMsTimeline;
}

// Collectives every rank ran once, by (name, sequence number), in rank 0's order; each rank's
// wait in them from its arrival to the last arrival.
std::vector<MatchedCollective> match_collectives(std::vector<RankTimeline>& ranks) {
  using Key = std::pair<int32_t, int64_t>;
  std::map<Key, std::vector<const TimelineCollective*>> by_key;
  std::set<Key> twice;  // a rank ran it twice (two groups with one name): not matched
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const TimelineCollective& c : ranks[r].collectives) {
      auto& list = by_key[{c.name_id, c.seq}];
      list.resize(ranks.size(), nullptr);
      if (list[r]) twice.insert({c.name_id, c.seq});
      list[r] = &c;
    }
  }
  std::vector<MatchedCollective> matched;
  for (auto& [key, list] : by_key) {
    if (twice.count(key) || std::count(list.begin(), list.end(), nullptr) > 0) continue;
    matched.push_back({key.second, list[0]->iteration, list, {}, {}});
  }
  std::sort(matched.begin(), matched.end(),
            [](auto& a, auto& b) { return a.per_rank[0]->begin < b.per_rank[0]->begin; });
  for (size_t k = 0; k < matched.size(); ++k) {
    MatchedCollective& m = matched[k];
    int64_t last = std::numeric_limits<int64_t>::min();
    for (size_t r = 0; r < ranks.size(); ++r) {
      const int64_t after = k > 0 ? matched[k - 1].per_rank[r]->end : std::numeric_limits<int64_t>::min();
      m.arrival.push_back(std::max(m.per_rank[r]->begin, after));
      last = std::max(last, m.arrival.back());
    }
    for (size_t r = 0; r < ranks.size(); ++r) {
      const int64_t until = std::min(last, m.per_rank[r]->end);
      m.wait_ms.push_back(idle_ms(ranks[r], m.arrival[r], until));
      if (until > m.arrival[r]) ranks[r].waits.push_back({m.arrival[r], until});
    }
  }
  for (RankTimeline& r : ranks)
    r.waits = merge_intervals(std::move(r.waits));
  return matched;
}

}  // namespace

PhaseTimes RankTimeline::phase_times(int64_t from, int64_t to) const {
  PhaseTimes t{};
  if (to <= from) return t;
  if (gpu) {  // the GPU's kernels by the phase that launched them, and where it ran nothing
    for (int p = 0; p < kPhaseCount; ++p)
      t[static_cast<size_t>(p)] = total_length(clip(gpu_phases[static_cast<size_t>(p)], from, to)) * kNsToMsTimeline;
    t[4] = (to - from - total_length(clip(gpu_busy, from, to))) * kNsToMsTimeline;
    return t;
  }
  const std::vector<Interval> waiting = clip(waits, from, to);
  for (int p = 1; p <= 3; ++p)  // host (4) stays 0: the CPU's view has no GPU to wait for
    t[static_cast<size_t>(p)] = total_length(clip(phases[static_cast<size_t>(p)], from, to)) * kNsToMsTimeline;
  std::vector<Interval> covered = clip(busy, from, to);
  covered.insert(covered.end(), waiting.begin(), waiting.end());
  t[0] = (to - from - total_length(merge_intervals(std::move(covered)))) * kNsToMsTimeline;
  return t;
}

std::map<int64_t, double> RankTimeline::gradient_gaps(int64_t from, int64_t to) const {
  std::map<int64_t, double> gaps;
  const std::vector<Interval>& backward = phases[2];
  auto it = std::lower_bound(ready.begin(), ready.end(), std::make_pair(from, std::numeric_limits<int64_t>::min()));
  int64_t previous = from;
  for (; it != ready.end() && it->first <= to; ++it) {
    // The span ending at or after it: backward ends at its last gradient (finish_timeline),
    // which a strict "before the end" left out, and with it the first layer's gradient.
    const auto span = std::upper_bound(backward.begin(), backward.end(), it->first,
                                       [](int64_t t, const Interval& i) { return t <= i.end; });
    if (span == backward.end() || span->begin > it->first) continue;  // not in backward
    gaps[it->second] += (it->first - std::max(previous, span->begin)) * kNsToMsTimeline;
    previous = it->first;
  }
  return gaps;
}

RunTimelines read_timelines(RunStoreReader& run, bool layers) {
  RunTimelines t;
  std::map<int, RankTimeline> by_rank;
  std::map<int, GpuSpans> gpu;
  std::set<int64_t> cut_short;
  std::vector<Kind> kinds = {Kind::Iteration, Kind::Forward, Kind::Backward,  Kind::Optimizer, Kind::PgOp,
                             Kind::GpuKernel, Kind::GpuComm, Kind::GpuMemcpy, Kind::GpuMemset, Kind::CudaRuntime};
  if (layers) kinds.push_back(Kind::GradReady);
  run.for_each_span(
      [&](const CompactSpan& s) {
        RankTimeline& r = by_rank[s.rank];
        r.rank = s.rank;
        add_span(r, s, cut_short);
        add_gpu_span(gpu[s.rank], s);
      },
      kinds);
  t.imported = run.run().config_json.find("\"torch-trace\"") != std::string::npos;
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (auto& [rank, r] : by_rank) {
    finish_timeline(r);
    apply_gpu_truth(r, std::move(gpu[rank]));
    for (const TimelineIteration& i : r.iterations)
      first = std::min(first, i.iteration), last = std::max(last, i.iteration);
    t.ranks.push_back(std::move(r));
  }
  t.first_iteration = first;
  t.last_iteration = last;
  t.cut_short.assign(cut_short.begin(), cut_short.end());
  t.matched = match_collectives(t.ranks);
  return t;
}

}  // namespace ddpscope::probes
