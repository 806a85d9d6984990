// The ranks the others wait for when no one rank stands out (slow_cause.h's SlowGroup): two
// ranks slow alike take turns being last, so each costs the job only the gap to the other,
// while the rest wait for both; their waits tell them apart.
#pragma once

#include <vector>

#include "slow_cause.h"
#include "slow_cause_timeline.h"

namespace ddpscope::probes {

// `waits` by rank index, `phase_ms` each rank's mean phase times per iteration (same order),
// over `iterations`. The split of the ranks by their waits where the ranks above wait at least
// `noise_ms` and three times as long as any below, the widest such, and each of them waited over
// the noise in two thirds of the iterations (a rank slow for the last 2 of 10 is no group: it is
// a slowdown too short to name); the group is those below (fewer than all), with the phase where
// their median is furthest over the others'. Empty ranks: no such split, or no phase of theirs
// longer by half the noise.
SlowGroup find_late_group(const std::vector<RankWait>& waits, const std::vector<PhaseTimes>& phase_ms, double noise_ms,
                          int iterations);

}  // namespace ddpscope::probes
