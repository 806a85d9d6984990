// What ddpscope-worker says to its launcher, in job_events.h's lines: rank 0 its start,
// progress and end on stdout; any rank its error and its end on stderr. Everything else a
// rank prints passes through to the user unchanged.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "job_events.h"

namespace ddpscope::apps {

namespace job_events = probes::job_events;

// An RPC job's start (examples, rpc-ping), said by rank 0 once init_rpc has returned (the ring
// example, which uses no RPC: once its process group is up): every rank has then passed MPI's
// start-up and the RPC bootstrap, neither of which has a timeout of its own, so the launcher's
// start watchdog (job_watchdogs.h) waits for this line.
inline void emit_group_up(int rank, int world_size, const std::string& describe) {
  if (rank != 0) return;
  job_events::write_event(stdout, job_events::Start{world_size, "mpi", describe});
  std::fflush(stdout);
}

// A rank's end, before MPI's shutdown (which has no timeout): how many events its probes
// shipped and could not. The launcher's end watchdog starts at the first one
// (job_watchdogs.h), so a rank stopped or stuck while the others end is named.
inline void emit_rank_end(int rank, uint64_t shipped, uint64_t dropped) {
  job_events::write_event(stderr, job_events::RankEnd{rank, shipped, dropped});
}

}  // namespace ddpscope::apps
