// Ranks of a running job that cannot answer for their stack: a rank stopped by a
// signal or a debugger runs no code, its stall watcher included, and a rank that exited has
// nothing left to ask. What the run file says about them is their last events; what the
// host says is their process's state, which the caller reads while the job runs (the rank's
// pid and host are in the run; only ranks on this host can be looked at).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hang_analysis.h"

namespace ddpscope::probes {

// Each rank's process state ('T' stopped, 't' traced, 'Z' or 0 gone, ...), read now from
// /proc for the ranks whose host is this one (ddpscope/process_state.h). Not a pure
// function of the run: the only one here, for live views and `hang` on a running job.
std::map<int, char> rank_process_states(const std::vector<RankRow>& ranks);

// Adds to the verdict (and the findings' first line) a sentence for each rank that cannot
// answer, e.g. "Rank 1 did not answer: its process (pid 4242) is stopped by a signal
// (SIGSTOP?), so it runs no code; its last events above say where it stopped.", and lists
// them in report.unanswering. Ranks that run, that finished their iterations, or whose state
// is not known are left alone.
void add_unanswering_ranks(HangReport& report, const std::vector<RankRow>& ranks, const std::map<int, char>& states);

// A run that is over: the ranks whose process the launcher saw stopped (by a signal or a
// debugger) when it ended the job (RankRow::end_state, schema 14), said the same way in the
// past tense ("Rank 1 did not answer: its process (pid 4242) was stopped by a signal ... when
// the job was ended"). Ranks that had exited are left to the run's own message on their end.
void add_ranks_stopped_at_the_end(HangReport& report, const std::vector<RankRow>& ranks);

}  // namespace ddpscope::probes
