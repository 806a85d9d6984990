// Why an iteration is slow: the cause, not the victim.
//
// Every collective is a meeting point: no rank leaves it before the last one arrives. So the
// job's time is a chain of stretches between meetings, and each stretch lasts as long as its
// slowest rank's work. Collectives are matched across ranks by their sequence number; each
// rank's stretch k runs from its arrival at collective k-1 to its arrival at collective k.
// The rank that arrives last at collective k costs the job the time by which it is later than
// the next-to-last rank (the time lost to it). Which part of its stretch made it late is found
// by comparing its stretch, phase by phase, with the other ranks' median: outside the step
// (between iterations and before forward: input loading, logging), forward, backward (and in
// backward, the layer whose gradient took longest to become ready), the optimizer.
//
// Summed over the iterations past warm-up (and before the last), the rank that cost the job
// the most time is the straggler when it cost over 10% of the iteration and was the one
// waited for in 2/3 of the iterations; its phase is the one it spent the most in beyond the
// others, over the iterations it gated. A stretch that alone loses ten iterations' worth of
// time (and 100 ms: a rank stopped for a while) is a stall: named with its iteration and left
// out of the means, as are iterations an error cut short. Durations are compared within each
// rank, so a clock offset between hosts does not change the phase; only which rank was last
// comes from the run's common clock. docs/why-slow.md tells the rules to users.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "link_matrix.h"
#include "run_store_reader.h"

namespace ddpscope::probes {

// The phases a rank's time is split into, as `why --json` names them.
// "host": on the GPU, time its GPU ran nothing, waiting for the CPU to launch work.
inline constexpr const char* kPhaseNames[] = {"outside_step", "forward", "backward", "optimizer", "host"};
inline constexpr int kPhaseCount = 5;

struct SlowStraggler {
  int rank = -1;  // -1: no rank stands out
  std::string phase;
  std::string where;  // the layer (module) in backward, when one stands out; else empty
  // In the iterations it gated (all, usually): its time in the phase less the others' median,
  // and the two, per iteration.
  double extra_ms_per_iteration = 0;
  double rank_phase_ms = 0, others_phase_ms = 0;
  double lost_ms_per_iteration = 0;  // the job's time lost to it
  int iterations = 0;                // iterations it was the last to arrive
  std::string waited_in;             // the collective the others most waited in
  // Its training thread's wait for a CPU in the phase (ready to run while other threads held
  // the host's cores: the run-queue delay the engine records per phase), and the other ranks'
  // median, per iteration it gated; -1 where the run did not record it.
  double cpu_wait_ms = -1, others_cpu_wait_ms = -1;
  // Late for want of a core: waiting for a CPU explains at least half of its excess in the
  // phase. The host is oversubscribed; the rank's work is not slower.
  bool for_want_of_cpu() const {
    return cpu_wait_ms >= 0 && extra_ms_per_iteration > 0 &&
           cpu_wait_ms - std::max(0.0, others_cpu_wait_ms) >= 0.5 * extra_ms_per_iteration;
  }
};

struct RankWait {
  int rank = 0;
  double wait_ms_per_iteration = 0;  // waiting for the others to arrive, in every collective
  double lost_ms_per_iteration = 0;  // the job's time lost to this rank
  int last_in = 0;                   // iterations it was the one the job waited for
  int waited_in = 0;                 // iterations it waited for the others over the noise
};

struct SlowStall {
  int64_t iteration = 0;
  int rank = 0;  // the rank the others waited for
  double lost_ms = 0;
  std::string phase;       // where its time went in that stretch
  std::string collective;  // the collective the others waited in: "allreduce #328"
  int waiting_rank = 0;
};

// One iteration's straggler: the rank whose own work cost the job the most time in it.
struct SlowIteration {
  int64_t iteration = 0;
  int rank = -1;  // -1: no rank cost the job more than the noise
  double lost_ms = 0;
};

// A slowdown that began (or ended) during the run: no rank gated 2/3 of the run's
// iterations, but one gated 2/3 of a stretch of at least 5 of them (and a tenth of the
// run). The verdict is then over that stretch, and says so.
struct SlowSpell {
  int64_t first = -1, last = -1;   // the stretch's first and last iteration; -1: none
  int run_iterations = 0;          // the iterations of the whole run analysed
  bool to_the_end = false;         // it lasted to the run's last analysed iteration
  double other_iterations_ms = 0;  // the mean iteration outside it, measured
};

// With no straggler: ranks the others wait for that take turns being last, so that none of
// them alone costs the job over the noise (two ranks slow alike; a rank whose slowdown the
// others' work on shared cores half hides). Found by the waits: they hardly wait, the others
// wait over the noise and three times as long (slow_cause_group.h).
struct SlowGroup {
  std::vector<int> ranks;                    // empty: none
  std::string phase;                         // where they spend longer than the others
  double phase_ms = 0, others_phase_ms = 0;  // per iteration: their median, the others'
  double others_wait_ms = 0;                 // the least any other rank waits, per iteration
  int iterations = 0;                        // iterations one of them was the one waited for
};

struct SlowCause {
  std::string not_analysed;  // why there is no verdict (one rank, no collectives, ...); empty when there is
  int ranks = 0;
  int iterations = 0;           // analysed: past warm-up, not cut short, not stalled
  double iteration_ms = 0;      // mean iteration time (start to next start), over ranks
  double noise_ms = 0;          // below this, a rank's lost time is noise
  SlowStraggler straggler;      // rank -1 when the ranks are within noise
  std::vector<RankWait> waits;  // every rank, by rank
  double what_if_ms = 0;        // the mean iteration time without the straggler's excess
  // Ranks on CPUs share a host: without the wait they would compute at the same time on its
  // cores, so the what-if is a floor (4 ranks on 2 cores: re-runs 12-26 % slower than it).
  bool ranks_share_cores = false;
  // With no straggler: each rank's threads' wait for a core per iteration (every phase, the
  // "cpu_wait_ms.*" metrics), the mean over ranks; -1: not recorded, or a straggler named.
  double cpu_wait_ms = -1;
  // With a straggler: the same wait in the slow run, how far the what-if may be off either way
  // (-1: not recorded). How long ranks wait for a core depends on when they run, which the
  // slowdown changes: on 2 cores the 2-rank re-runs without it came out 0.4-2.4 ms faster
  // than the what-if where the slow run's ranks waited 1.4-2.5 ms, and 4-rank ones up to 2.8
  // ms slower where it spread their work out (tests/bench/run_why_matrix.py).
  double what_if_give_or_take_ms = -1;
  std::vector<SlowStall> stalls;   // the largest first
  std::vector<int64_t> cut_short;  // iterations an error cut short, left out
  // Iterations some rank did not run, left out (under join a rank out of data only shadows
  // the others' collectives: it would arrive first at each, and the others be named for its
  // absence), and those ranks.
  std::vector<int64_t> not_every_rank;
  std::vector<int> absent_ranks;
  std::vector<SlowIteration> by_iteration;  // every iteration analysed, in order (the whole run's)
  SlowSpell spell;                          // first -1: the verdict is over the whole run
  SlowGroup late_group;                     // with no straggler: the ranks the others wait for
  // A link, rank or host markedly slower than the others (link_matrix.h): said before the
  // straggler, since every collective waits for it whichever rank arrives last.
  std::optional<SlowLinkVerdict> slow_link;
};

// `layers`: read when each gradient became ready, to name the layer of a slow backward and to
// end backward at its last gradient (a detail kind: 9 in 10 spans of a run); without them a
// very large run is read in a tenth of the time, and backward keeps its wait for the buckets.
SlowCause analyze_slow_cause(RunStoreReader& run, bool layers = true);

// From one read of the run: the verdict over the whole run, and over its last `recent`
// iterations (the Live tab's "now": a rank that became slow a few iterations ago is named
// there before it weighs on the whole run); `recent` 0 leaves the second empty.
struct SlowCauses {
  SlowCause whole, recent;
};
// `links`: the run's link report when the caller has it already (else it is read here).
// `until` >= 0: only iterations up to that one (the verdict as a live view had it then).
SlowCauses analyze_slow_causes(RunStoreReader& run, int recent, bool layers = true, const LinkReport* links = nullptr,
                               int64_t until = -1);

}  // namespace ddpscope::probes
