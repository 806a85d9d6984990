#include "slow_cause_group.h"

#include <algorithm>
#include <numeric>

#include "ddpscope/median.h"

namespace ddpscope::probes {
namespace {

// How many times as long the waiting ranks must wait as the ones they wait for.
constexpr double kWaitRatio = 3;
// ... in this share of the iterations at least.
constexpr double kMostOfTheIterations = 2.0 / 3.0;

double median_phase(const std::vector<PhaseTimes>& phase_ms, const std::vector<size_t>& ranks, int phase) {
  std::vector<double> v;
  for (size_t r : ranks)
    v.push_back(phase_ms[r][static_cast<size_t>(phase)]);
  return median(std::move(v));
}

}  // namespace

SlowGroup find_late_group(const std::vector<RankWait>& waits, const std::vector<PhaseTimes>& phase_ms, double noise_ms,
                          int iterations) {
  const size_t n = waits.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return waits[a].wait_ms_per_iteration < waits[b].wait_ms_per_iteration; });
  size_t split = 0;
  double widest = 0;
  for (size_t k = 1; k < n; ++k) {
    const double below = waits[order[k - 1]].wait_ms_per_iteration, above = waits[order[k]].wait_ms_per_iteration;
    if (above < std::max(noise_ms, kWaitRatio * below)) continue;
    const double ratio = above / std::max(below, 1e-3);
    if (ratio > widest) widest = ratio, split = k;
  }
  SlowGroup g;
  if (split == 0 || phase_ms.size() != n) return g;
  const std::vector<size_t> late(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(split)),
      others(order.begin() + static_cast<std::ptrdiff_t>(split), order.end());
  for (size_t r : others)
    if (waits[r].waited_in < kMostOfTheIterations * iterations) return g;
  for (size_t r : late) {
    g.ranks.push_back(waits[r].rank);
    g.iterations += waits[r].last_in;
  }
  std::sort(g.ranks.begin(), g.ranks.end());
  g.others_wait_ms = waits[others.front()].wait_ms_per_iteration;
  double most = 0;
  for (int p = 0; p < kPhaseCount; ++p) {
    const double mine = median_phase(phase_ms, late, p), theirs = median_phase(phase_ms, others, p);
    if (mine - theirs > most)
      most = mine - theirs, g.phase = kPhaseNames[p], g.phase_ms = mine, g.others_phase_ms = theirs;
  }
  // Late with no phase longer than the others' by half the noise: the machine's jitter (as for
  // a straggler over a few iterations), not a group slow at its work.
  return most < 0.5 * noise_ms ? SlowGroup{} : g;
}

}  // namespace ddpscope::probes
