// The ring allreduce taught from a real run: `ddpscope-cli example ring --np 4` records
// each rank's steps of engine/c10d/ring_allreduce.h as ring_step spans (which block it
// sent to the next rank, which it received from the one before). The lesson replays them
// in happens-before order (a block arrives after it was sent; causal_order.h), each step
// as its send and its receive: what each rank holds of each block (whose values it sums so far), the
// reduce-scatter phase (n-1 steps: each rank ends holding one block's full sum) and the
// all-gather phase (n-1 steps: the sums go around), and why each rank sends 2(n-1)/n of
// the data, whatever n. Plain data, no Qt.
#pragma once

#include <string>

#include "lesson.h"

namespace ddpscope::gui {

inline constexpr int kMaxRingRanks = 16;

// The first ring allreduce of the run (its lowest sequence number with ring steps), from
// every rank. Steps are empty when the run recorded none. `skew` shifts ranks' clocks.
// Throws probes::RunStoreError for a ring of more than kMaxRingRanks, or steps outside it.
Lesson loadRingLesson(probes::RunStoreReader& run, const ClockSkew& skew = {});
// The state after the first `applied` steps: each rank holds, of each block, the sum of
// the ranks whose bits are set; computed from the recorded blocks, not assumed.
LessonState ringStateAfter(const Lesson& lesson, size_t applied);
std::string explainRingStep(const Lesson& lesson, size_t i);
// Which ranks' values `holds` names, as "0+1+2", or "all 4" when every rank's.
std::string ringHoldsText(uint64_t holds, int ranks);

}  // namespace ddpscope::gui
