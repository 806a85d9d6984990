#include "slow_cause.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include "ddpscope/median.h"
#include "overlap_analysis.h"
#include "slow_cause_group.h"
#include "slow_cause_timeline.h"

namespace ddpscope::probes {
namespace {

constexpr double kNsToMsCause = 1e-6;
// A stretch that alone loses this many (median) iterations' worth of time, and at least
// 100 ms, is a stall, not the rank's pace.
constexpr double kStallIterations = 10;
constexpr double kStallMinMs = 100;
// Below this share of the iteration (and 0.5 ms), a rank's cost to the others is noise: ranks
// sharing a machine differ by this much from one iteration to the next.
constexpr double kNoiseShare = 0.10;
// A straggler is the rank waited for in at least this share of the iterations.
constexpr double kMostIterations = 2.0 / 3.0;
// Over this many iterations or fewer (why --last, the Live tab's 3), a straggler's phase must
// be longer than the others' by this share of the noise bar at least.
constexpr int kShortWindow = 10;
constexpr double kSlowerShareOfNoise = 0.5;
// The fewest iterations a slowdown that began or ended during the run is named over.
constexpr size_t kSpellMinIterations = 5;
// ... and its iterations' mean must be this many times the others' (and 1 ms longer).
constexpr double kSpellLonger = 1.2;

// One stretch between two collectives, as every rank spent it.
struct Stretch {
  int64_t iteration = 0;
  int last = -1;       // the rank the others waited for (its index in the timelines)
  double lost_ms = 0;  // its arrival after the next-to-last rank's
  std::string collective;
  int waiting_rank = 0;                           // the rank that arrived first (index)
  std::vector<PhaseTimes> phases;                 // by rank
  std::vector<std::map<int64_t, double>> layers;  // by rank: param -> ms until its gradient
};

double others_median(const std::vector<PhaseTimes>& phases, int rank, int phase) {
  std::vector<double> v;
  for (size_t r = 0; r < phases.size(); ++r)
    if (static_cast<int>(r) != rank) v.push_back(phases[r][static_cast<size_t>(phase)]);
  return median(std::move(v));
}

std::vector<Stretch> stretches_of(const std::vector<RankTimeline>& ranks, const std::vector<MatchedCollective>& matched,
                                  const std::vector<std::string>& names) {
  std::vector<Stretch> out;
  const size_t n = ranks.size();
  for (size_t k = 1; k < matched.size(); ++k) {
    Stretch s;
    s.iteration = matched[k].iteration;
    std::vector<std::pair<int64_t, int>> arrivals;
    for (size_t r = 0; r < n; ++r)
      arrivals.emplace_back(matched[k].arrival[r], static_cast<int>(r));
    std::sort(arrivals.begin(), arrivals.end());
    s.last = arrivals.back().second;
    s.waiting_rank = arrivals.front().second;
    s.lost_ms = (arrivals[n - 1].first - arrivals[n - 2].first) * kNsToMsCause;
    const int32_t name = matched[k].per_rank[0]->name_id;
    s.collective = (name >= 0 && static_cast<size_t>(name) < names.size() ? names[static_cast<size_t>(name)]
                                                                          : std::string("collective")) +
                   " #" + std::to_string(matched[k].seq);
    for (size_t r = 0; r < n; ++r) {
      const int64_t from = matched[k - 1].arrival[r], to = matched[k].arrival[r];
      s.phases.push_back(ranks[r].phase_times(from, to));
      s.layers.push_back(ranks[r].gradient_gaps(from, to));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The lost time of a stretch that the late rank's own work explains, shared among its phases
// by how much longer each took than the others' median. A rank late only because the others
// got ahead while they waited for it before (they had nothing left to do) lost no time here.
PhaseTimes share_lost(const Stretch& s) {
  PhaseTimes excess{}, share{};
  double total = 0;
  for (int p = 0; p < kPhaseCount; ++p) {
    const double e = s.phases[static_cast<size_t>(s.last)][static_cast<size_t>(p)] - others_median(s.phases, s.last, p);
    excess[static_cast<size_t>(p)] = std::max(0.0, e);
    total += excess[static_cast<size_t>(p)];
  }
  const double explained = std::min(s.lost_ms, total);
  for (int p = 0; p < kPhaseCount; ++p)
    share[static_cast<size_t>(p)] = total > 0 ? explained * excess[static_cast<size_t>(p)] / total : 0;
  return share;
}

double sum(const PhaseTimes& t) {
  double total = 0;
  for (double x : t)
    total += x;
  return total;
}

int largest(const PhaseTimes& t) { return static_cast<int>(std::max_element(t.begin(), t.end()) - t.begin()); }

// Each analysed iteration's time: from the end of the last collective of the iteration before
// it to the end of its own last collective. Every rank leaves a collective at about the same
// time, so the figure is the job's, not one rank's, and the time outside the step before an
// iteration belongs to it, as its stretches do.
std::vector<double> periods(const std::vector<MatchedCollective>& matched, const std::set<int64_t>& analysed) {
  std::map<int64_t, int64_t> last_end;  // iteration -> its last collective's end
  for (const MatchedCollective& m : matched) {
    int64_t end = 0;
    for (const TimelineCollective* c : m.per_rank)
      end = std::max(end, c->end);
    int64_t& e = last_end[m.iteration];
    e = std::max(e, end);
  }
  std::vector<double> out;
  for (auto it = last_end.begin(); it != last_end.end(); ++it)
    if (analysed.count(it->first) && it != last_end.begin() && std::prev(it)->first == it->first - 1)
      out.push_back((it->second - std::prev(it)->second) * kNsToMsCause);
  return out;
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v)
    sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// The layer of the straggler's backward that took longest beyond the others, when one layer
// holds most of the phase's excess.
std::string slow_layer(const std::vector<Stretch>& stretches, int rank, int rank_id, RunStoreReader& run) {
  std::map<int64_t, double> excess;
  double total = 0;
  for (const Stretch& s : stretches) {
    if (s.last != rank || s.lost_ms <= 0) continue;
    for (const auto& [param, ms] : s.layers[static_cast<size_t>(rank)]) {
      std::vector<double> others;
      for (size_t r = 0; r < s.layers.size(); ++r) {
        if (static_cast<int>(r) == rank) continue;
        const auto it = s.layers[r].find(param);
        if (it != s.layers[r].end()) others.push_back(it->second);
      }
      const double e = ms - median(std::move(others));
      if (e > 0) excess[param] += e, total += e;
    }
  }
  if (excess.empty()) return {};
  const auto top = std::max_element(excess.begin(), excess.end(), [](auto& a, auto& b) { return a.second < b.second; });
  if (top->second < 0.5 * total) return {};
  for (const ParamRow& p : run.params(rank_id)) {
    if (p.index != top->first) continue;
    const auto dot = p.name.rfind('.');
    return dot == std::string::npos ? p.name : p.name.substr(0, dot);
  }
  return "parameter " + std::to_string(top->first);
}

// The collective's kind without its number: "allreduce #12" -> "allreduce".
std::string kind_of(const std::string& collective) { return collective.substr(0, collective.rfind(" #")); }

// The straggler's wait for a CPU in its phase (the engine's "cpu_wait_ms.<phase>" metrics) in
// the iterations it gated, and the other ranks' median over the same iterations.
void add_cpu_wait(SlowStraggler& g, const std::vector<SlowIteration>& rows, RunStoreReader& run) {
  std::map<int, std::map<int64_t, double>> by_rank;  // rank -> iteration -> ms
  for (const MetricRow& m : run.metrics("cpu_wait_ms." + g.phase))
    if (m.iteration >= 0 && std::isfinite(m.value)) by_rank[m.rank][m.iteration] = m.value;
  const auto mean_over_gated = [&](const std::map<int64_t, double>& values, double& out) {
    double total = 0;
    int n = 0;
    for (const SlowIteration& row : rows) {
      if (row.rank != g.rank) continue;
      if (const auto it = values.find(row.iteration); it != values.end()) total += it->second, ++n;
    }
    if (n > 0) out = total / n;
    return n > 0;
  };
  const auto own = by_rank.find(g.rank);
  if (own == by_rank.end() || !mean_over_gated(own->second, g.cpu_wait_ms)) return;
  std::vector<double> others;
  for (const auto& [rank, values] : by_rank) {
    double ms = 0;
    if (rank != g.rank && mean_over_gated(values, ms)) others.push_back(ms);
  }
  if (!others.empty()) g.others_cpu_wait_ms = median(std::move(others));
}

// Each rank's threads' wait for a core per iteration, all phases, over the iterations; the
// mean over the ranks that recorded it; -1 when none did.
double cpu_wait_per_iteration(RunStoreReader& run, const std::set<int64_t>& iterations) {
  std::map<int, double> total;  // rank -> ms
  for (const char* phase : {"outside_step", "forward", "backward", "optimizer"})
    for (const MetricRow& m : run.metrics(std::string("cpu_wait_ms.") + phase))
      if (iterations.count(m.iteration) && std::isfinite(m.value)) total[m.rank] += m.value;
  if (total.empty() || iterations.empty()) return -1;
  double sum = 0;
  for (const auto& [rank, ms] : total)
    sum += ms;
  return sum / static_cast<double>(total.size()) / static_cast<double>(iterations.size());
}

// What the straggler's summing found, handed to describe_straggler.
struct StragglerSums {
  int index = 0;  // the straggler's index in the timelines
  const std::vector<double>& lost;
  const std::vector<PhaseTimes>& lost_by_phase;
  std::map<int64_t, std::vector<PhaseTimes>>& phases_in;  // iteration -> each rank's phases
  const std::vector<int>& last_in;
};

// The straggler's phase: the one where, over the iterations it gated, it spent the most beyond
// the other ranks' median (where its lost time went stretch by stretch, when no phase was
// longer overall); its layer in backward; the collective the others waited in; the what-if.
SlowCause describe_straggler(SlowCause cause, const StragglerSums& x, const std::vector<Stretch>& stretches,
                             const RunTimelines& t, const std::set<int64_t>& analysed, RunStoreReader& run) {
  const size_t n = t.ranks.size(), s = static_cast<size_t>(x.index);
  const double iters = static_cast<double>(analysed.size());
  SlowStraggler& g = cause.straggler;
  g.rank = t.ranks[s].rank;
  std::vector<PhaseTimes> phase_sum(n, PhaseTimes{});
  for (const SlowIteration& row : cause.by_iteration) {
    if (row.rank != g.rank) continue;
    for (size_t r = 0; r < n; ++r)
      for (int q = 0; q < kPhaseCount; ++q)
        phase_sum[r][static_cast<size_t>(q)] += x.phases_in[row.iteration][r][static_cast<size_t>(q)];
  }
  PhaseTimes net{};
  for (int q = 0; q < kPhaseCount; ++q)
    net[static_cast<size_t>(q)] = phase_sum[s][static_cast<size_t>(q)] - others_median(phase_sum, x.index, q);
  const int p = net[static_cast<size_t>(largest(net))] > 0 ? largest(net) : largest(x.lost_by_phase[s]);
  const double gated = std::max(1, x.last_in[s]);
  g.phase = kPhaseNames[p];
  g.rank_phase_ms = phase_sum[s][static_cast<size_t>(p)] / gated;
  g.others_phase_ms = others_median(phase_sum, x.index, p) / gated;
  g.extra_ms_per_iteration = g.rank_phase_ms - g.others_phase_ms;
  g.lost_ms_per_iteration = x.lost[s] / iters;
  g.iterations = x.last_in[s];
  if (g.phase == std::string("backward")) g.where = slow_layer(stretches, x.index, g.rank, run);
  add_cpu_wait(g, cause.by_iteration, run);
  std::map<std::string, double> lost_in;  // by collective kind
  for (const Stretch& st : stretches)
    if (analysed.count(st.iteration) && st.last == x.index) lost_in[kind_of(st.collective)] += sum(share_lost(st));
  if (!lost_in.empty())
    g.waited_in =
        std::max_element(lost_in.begin(), lost_in.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  // Without its excess in the phase the job saves what it lost to the rank there: the phase's
  // share of the lost time the rank's longer phases explain, applied to all it lost. What no
  // phase explains (a rank that slept wakes with cold caches; the waiting ranks poll less
  // often the longer they wait) goes with the phases that do: subtracting the phase's excess
  // alone left 2-3 ms of each slept 20-30 ms in the what-if, 13 % median error against
  // re-runs without the slowdown, against 10 % (tests/bench/run_why_matrix.py, seed 65).
  const double explained = sum(x.lost_by_phase[s]);
  const double saved = explained > 0 ? x.lost[s] * x.lost_by_phase[s][static_cast<size_t>(p)] / explained
                                     : std::min(x.lost[s], std::max(0.0, net[static_cast<size_t>(p)]));
  cause.what_if_ms = cause.iteration_ms - saved / iters;
  cause.what_if_give_or_take_ms = cpu_wait_per_iteration(run, analysed);
  return cause;
}

// Each rank's waits for the others over the analysed iterations, with the job's time lost to
// it and the iterations it was the one waited for (by rank index).
std::vector<RankWait> rank_waits(const RunTimelines& t, const std::set<int64_t>& analysed,
                                 const std::vector<double>& lost, const std::vector<int>& last_in, double noise_ms) {
  const size_t n = t.ranks.size();
  const double iters = static_cast<double>(analysed.size());
  std::vector<double> wait(n, 0);
  std::map<int64_t, std::vector<double>> wait_in;  // iteration -> each rank's wait
  for (const MatchedCollective& m : t.matched) {
    if (!analysed.count(m.iteration)) continue;
    auto& in_iteration = wait_in[m.iteration];
    in_iteration.resize(n, 0);
    for (size_t r = 0; r < n; ++r)
      wait[r] += m.wait_ms[r], in_iteration[r] += m.wait_ms[r];
  }
  std::vector<RankWait> out;
  for (size_t r = 0; r < n; ++r) {
    const int waited = static_cast<int>(
        std::count_if(wait_in.begin(), wait_in.end(), [&](const auto& it) { return it.second[r] >= noise_ms; }));
    out.push_back({t.ranks[r].rank, wait[r] / iters, lost[r] / iters, last_in[r], waited});
  }
  return out;
}

// With no straggler: the ranks that take turns being last while the others wait for them all
// (two ranks slow alike were said to be "taking turns ... (a shared or busy machine?)"), and
// the what-if without their excess in its phase, no more than the others wait for them.
void add_late_group(SlowCause& cause, const std::map<int64_t, std::vector<PhaseTimes>>& phases_in) {
  const size_t n = cause.waits.size();
  std::vector<PhaseTimes> phase_ms(n, PhaseTimes{});
  for (const auto& [iteration, phases] : phases_in)
    for (size_t r = 0; r < n && r < phases.size(); ++r)
      for (int p = 0; p < kPhaseCount; ++p)
        phase_ms[r][static_cast<size_t>(p)] += phases[r][static_cast<size_t>(p)] / cause.iterations;
  cause.late_group = find_late_group(cause.waits, phase_ms, cause.noise_ms, cause.iterations);
  const SlowGroup& g = cause.late_group;
  if (!g.ranks.empty()) cause.what_if_ms -= std::min(g.others_wait_ms, g.phase_ms - g.others_phase_ms);
}

// Per rank sums over the analysed stretches, turned into the verdict.
SlowCause summarize_stretches(SlowCause cause, const std::vector<Stretch>& stretches, const RunTimelines& t,
                              const std::set<int64_t>& analysed, RunStoreReader& run, bool short_window = false) {
  const size_t n = t.ranks.size();
  const double iters = static_cast<double>(analysed.size());
  std::vector<double> lost(n, 0);
  std::vector<PhaseTimes> lost_by_phase(n, PhaseTimes{});
  std::map<int64_t, std::vector<PhaseTimes>> phases_in;  // iteration -> each rank's phases
  std::map<int64_t, std::vector<double>> lost_in_iteration;
  for (const Stretch& s : stretches) {
    if (!analysed.count(s.iteration)) continue;
    auto& phases = phases_in[s.iteration];
    phases.resize(n, PhaseTimes{});
    for (size_t r = 0; r < n; ++r)
      for (int p = 0; p < kPhaseCount; ++p)
        phases[r][static_cast<size_t>(p)] += s.phases[r][static_cast<size_t>(p)];
    const PhaseTimes share = share_lost(s);
    if (sum(share) <= 0) continue;
    lost[static_cast<size_t>(s.last)] += sum(share);
    for (int p = 0; p < kPhaseCount; ++p)
      lost_by_phase[static_cast<size_t>(s.last)][static_cast<size_t>(p)] += share[static_cast<size_t>(p)];
    auto& in_iteration = lost_in_iteration[s.iteration];
    in_iteration.resize(n, 0);
    in_iteration[static_cast<size_t>(s.last)] += sum(share);
  }
  cause.noise_ms = std::max(0.5, kNoiseShare * cause.iteration_ms);
  std::vector<int> last_in(n, 0);
  for (int64_t iteration : analysed) {
    SlowIteration row{iteration, -1, 0};
    if (const auto found = lost_in_iteration.find(iteration); found != lost_in_iteration.end()) {
      const auto top = std::max_element(found->second.begin(), found->second.end());
      const auto index = static_cast<size_t>(top - found->second.begin());
      if (*top >= cause.noise_ms) {
        ++last_in[index];
        row = {iteration, t.ranks[index].rank, *top};
      }
    }
    cause.by_iteration.push_back(row);
  }
  cause.waits = rank_waits(t, analysed, lost, last_in, cause.noise_ms);
  const int s = static_cast<int>(std::max_element(lost.begin(), lost.end()) - lost.begin());
  cause.what_if_ms = cause.iteration_ms;
  // A straggler costs the job time and is the one waited for in most iterations, or in half
  // of them at three times the cost of any other rank (a rank kept from its core by busy
  // loops gated 66 of 118 iterations, costing 6.3 ms an iteration against the other's 0.6:
  // in the rest no rank was late by over the noise); ranks that take turns being last are
  // jitter (a busy machine), not a cause.
  double next = 0;
  for (size_t r = 0; r < n; ++r)
    if (static_cast<int>(r) != s) next = std::max(next, lost[r]);
  const double share = last_in[static_cast<size_t>(s)] / iters;
  const bool stands_out = share >= kMostIterations || (share >= 0.5 && lost[static_cast<size_t>(s)] >= 3 * next);
  const auto no_straggler = [&] {
    cause.cpu_wait_ms = cpu_wait_per_iteration(run, analysed);  // what the verdict may blame instead
    add_late_group(cause, phases_in);
    return cause;
  };
  if (lost[static_cast<size_t>(s)] / iters < cause.noise_ms || !stands_out) return no_straggler();
  SlowCause named =
      describe_straggler(cause, {s, lost, lost_by_phase, phases_in, last_in}, stretches, t, analysed, run);
  // Over a few iterations (the Live tab's last 3), a rank late by over the noise whose every
  // phase took about the others' time is not slow at its work: its lateness is the machine's
  // jitter. Healthy runs' windows named a rank late by 2.1 ms an iteration for a forward 0.1 ms
  // longer, in 3 to 12 of 35 windows each. (Over a whole run, lateness in most iterations is
  // the evidence: the 128-GPU HTA traces' rank 1 is late by 220 ms in one of their two
  // iterations, its backward's kernels 18.6 ms longer.)
  if (short_window && named.straggler.extra_ms_per_iteration < kSlowerShareOfNoise * named.noise_ms)
    return no_straggler();
  return named;
}

// When no rank gated most of the run: the stretch one rank gated (it became slow at
// iteration 150 of 260, or was slow for a while), found as the run of iterations where the
// times it gated outnumber twice the others (the largest such sum, over ranks), and the
// verdict over it, when that names the rank.
SlowCause with_spell(SlowCause whole, const SlowCause& base, const std::vector<Stretch>& stretches,
                     const RunTimelines& t, const std::set<int64_t>& analysed, RunStoreReader& run) {
  const std::vector<SlowIteration>& rows = whole.by_iteration;
  const size_t n = rows.size();
  int best = 0, rank = -1;
  size_t first = 0, last = 0;
  for (const RankWait& w : whole.waits) {
    int sum = 0;
    size_t start = 0;
    for (size_t i = 0; i < n; ++i) {
      const int v = rows[i].rank == w.rank ? 1 : -2;
      if (sum <= 0)
        sum = v, start = i;
      else
        sum += v;
      if (sum > best) best = sum, rank = w.rank, first = start, last = i;
    }
  }
  if (rank < 0) return whole;
  // An iteration next to the stretch that the rank gated by a hair (a busy machine) is not the
  // slowdown: its edges start where the rank cost half the stretch's median or more.
  std::vector<double> costs;
  for (size_t i = first; i <= last; ++i)
    if (rows[i].rank == rank) costs.push_back(rows[i].lost_ms);
  const double edge = 0.5 * median(std::move(costs));
  while (first < last && (rows[first].rank != rank || rows[first].lost_ms < edge))
    ++first;
  while (last > first && (rows[last].rank != rank || rows[last].lost_ms < edge))
    --last;
  // A tenth of the run at least (rounded up: 7 of 79 iterations is under it), and as many
  // outside it: "the iterations before took" one iteration's time said nothing.
  const size_t length = last - first + 1, fewest = std::max<size_t>(kSpellMinIterations, (n + 9) / 10);
  if (length < fewest || n - length < fewest) return whole;
  std::set<int64_t> inside;
  for (size_t i = first; i <= last; ++i)
    inside.insert(rows[i].iteration);
  std::set<int64_t> outside;
  std::set_difference(analysed.begin(), analysed.end(), inside.begin(), inside.end(),
                      std::inserter(outside, outside.end()));
  // A busy machine's ranks take turns in streaks: the stretch's iterations must be markedly
  // longer than the others', as a real slowdown makes them.
  const double other_ms = mean(periods(t.matched, outside));
  SlowCause spell = base;
  spell.iterations = static_cast<int>(inside.size());
  spell.iteration_ms = mean(periods(t.matched, inside));
  if (spell.iteration_ms < kSpellLonger * other_ms || spell.iteration_ms - other_ms < 1.0) return whole;
  spell = summarize_stretches(std::move(spell), stretches, t, inside, run);
  if (spell.straggler.rank != rank) return whole;
  spell.by_iteration = whole.by_iteration;
  spell.spell = {rows[first].iteration, rows[last].iteration, static_cast<int>(n), last + 1 == n, other_ms};
  return spell;
}

// The verdict over the candidate iterations, or over the last `recent` of them (0: all).
SlowCause verdict_over(SlowCause cause, const RunTimelines& t, const std::vector<Stretch>& stretches,
                       std::set<int64_t> candidates, int recent, RunStoreReader& run) {
  if (recent > 0)
    while (candidates.size() > static_cast<size_t>(recent))
      candidates.erase(candidates.begin());
  // The median: one stall must not raise the bar it is measured against.
  const double stall_ms = std::max(kStallMinMs, kStallIterations * median(periods(t.matched, candidates)));
  std::set<int64_t> analysed = candidates;
  for (const Stretch& s : stretches) {
    if (!candidates.count(s.iteration) || s.lost_ms < stall_ms) continue;
    const PhaseTimes share = share_lost(s);
    cause.stalls.push_back({s.iteration, t.ranks[static_cast<size_t>(s.last)].rank, s.lost_ms,
                            kPhaseNames[largest(share)], s.collective,
                            t.ranks[static_cast<size_t>(s.waiting_rank)].rank});
    analysed.erase(s.iteration);
  }
  std::sort(cause.stalls.begin(), cause.stalls.end(), [](auto& a, auto& b) { return a.lost_ms > b.lost_ms; });
  cause.iterations = static_cast<int>(analysed.size());
  if (analysed.empty()) {
    cause.not_analysed = "no iteration past the first and before the last ran whole on every rank";
    return cause;
  }
  cause.iteration_ms = mean(periods(t.matched, analysed));
  SlowCause whole = summarize_stretches(cause, stretches, t, analysed, run, recent > 0 && recent <= kShortWindow);
  if (recent > 0) return whole;  // the Live tab's "now" is a stretch already
  // A rank may have become slow during the run: then the stretch since says more (and "the
  // iterations before took ..."). Also where it gated two thirds of the run: a rank slow from
  // iteration 150 of 460 gated 323, and the whole run's verdict mixed 150 fast iterations
  // into its waits and its "instead of".
  return with_spell(std::move(whole), cause, stretches, t, analysed, run);
}

}  // namespace

namespace {

// Whether two ranks that compute on CPUs run on one host.
bool cpu_ranks_share_a_host(RunStoreReader& run) {
  std::map<std::string, int> on_host;
  for (const RankRow& r : run.ranks())
    if (r.device == "cpu" && ++on_host[r.host] > 1) return true;
  return false;
}

// Takes out of `candidates` the iterations some rank has no iteration of, and notes them.
void leave_out_iterations_not_every_rank_ran(SlowCause& cause, std::set<int64_t>& candidates, const RunTimelines& t) {
  std::set<int> absent;
  for (auto it = candidates.begin(); it != candidates.end();) {
    bool everyone = true;
    for (const RankTimeline& r : t.ranks) {
      const bool ran = std::any_of(r.iterations.begin(), r.iterations.end(),
                                   [&](const TimelineIteration& i) { return i.iteration == *it; });
      if (!ran) everyone = false, absent.insert(r.rank);
    }
    if (everyone) {
      ++it;
    } else {
      cause.not_every_rank.push_back(*it);
      it = candidates.erase(it);
    }
  }
  cause.absent_ranks.assign(absent.begin(), absent.end());
}

}  // namespace

SlowCauses analyze_slow_causes(RunStoreReader& run, int recent, bool layers, const LinkReport* links, int64_t until) {
  SlowCause cause;
  RunTimelines t = read_timelines(run, layers);
  cause.ranks = static_cast<int>(t.ranks.size());
  cause.ranks_share_cores = cpu_ranks_share_a_host(run);
  cause.cut_short = t.cut_short;
  cause.slow_link = links ? links->slow : analyze_links(run).slow;
  const int world = run.run().world_size;
  if (t.ranks.size() < 2)
    cause.not_analysed = world < 2 ? "the run has one rank: no rank waits for another"
                                   : std::to_string(t.ranks.size()) + " of the run's " + std::to_string(world) +
                                         " ranks recorded an iteration (a job just started records them within "
                                         "a few iterations)";
  if (t.ranks.size() >= 2 && t.matched.size() < 2)
    cause.not_analysed = "no collective that every rank ran was recorded";
  if (!cause.not_analysed.empty()) return {cause, cause};
  const std::vector<std::string> names = run.names();
  const std::vector<Stretch> stretches = stretches_of(t.ranks, t.matched, names);
  // Iterations past warm-up and before the last (it ends with the job's teardown, or is still
  // running), not cut short.
  std::set<int64_t> candidates;
  // A trace's iterations are sampled from a longer job: none of them is a warm-up or a teardown.
  for (const Stretch& s : stretches)
    if (t.imported ? s.iteration >= t.first_iteration
                   : s.iteration > t.first_iteration && s.iteration < t.last_iteration)
      candidates.insert(s.iteration);
  for (int64_t i : t.cut_short)
    candidates.erase(i);
  if (until >= 0) candidates.erase(candidates.upper_bound(until), candidates.end());
  leave_out_iterations_not_every_rank_ran(cause, candidates, t);
  SlowCauses both;
  both.whole = verdict_over(cause, t, stretches, candidates, 0, run);
  if (recent > 0) both.recent = verdict_over(cause, t, stretches, candidates, recent, run);
  return both;
}

SlowCause analyze_slow_cause(RunStoreReader& run, bool layers) { return analyze_slow_causes(run, 0, layers).whole; }

}  // namespace ddpscope::probes
