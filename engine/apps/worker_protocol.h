// What ddpscope-worker says to its launcher, in job_events.h's lines: rank 0 its start,
// progress and end on stdout; any rank its error and its end on stderr. Everything else a
// rank prints passes through to the user unchanged.
#pragma once

#include <cstdint>
#include <cstdio>

#include "job_events.h"

namespace ddpscope::apps {

namespace job_events = probes::job_events;

// A rank's end, before MPI's shutdown (which has no timeout): how many events its probes
// shipped and could not. The launcher's end watchdog starts at the first one
// (job_watchdogs.h), so a rank stopped or stuck while the others end is named.
inline void emit_rank_end(int rank, uint64_t shipped, uint64_t dropped) {
  job_events::write_event(stderr, job_events::RankEnd{rank, shipped, dropped});
}

}  // namespace ddpscope::apps
