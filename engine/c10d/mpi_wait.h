// Waiting for MPI requests without holding a core.
//
// OpenMPI's blocking calls poll until they complete: a rank that waits 30 s in a
// collective for a late or stalled rank spends 30 s of a core on the wait (measured: a
// 2-rank job with rank 1 stalled 10 s used 11.3 s of CPU, sys time mostly, since
// mpi_yield_when_idle turns the poll into sched_yield calls). The waits here poll as
// fast as MPI does for a short while, where a transfer that is under way completes, and
// then sleep between polls for a small share of the time already waited: a wait is
// lengthened by at most about 1 % (and 1 ms), and a long one costs almost no CPU.
//
// Groups whose ranks span hosts do not use the barrier: it would add a network round trip
// to every collective.
//
// MPI progresses its transfers only inside its calls, so a transfer still running when
// the sleeps start moves on only at each poll. So the collectives wait for every rank here
// first (wait_for_every_rank) and then transfer at full speed; point-to-point waits, which
// are mostly for a late sender, back off (at most 1 ms between polls).
#pragma once

#include <mpi.h>

#include <chrono>
#include <span>

namespace ddpscope::c10d {

struct PollBackoff {
  // Polled without sleeping for this long.
  std::chrono::microseconds spin{2000};
  // Then each sleep is the time waited so far divided by this, within [min_sleep, max_sleep].
  int share = 100;
  std::chrono::microseconds min_sleep{20};
  std::chrono::microseconds max_sleep{1000};
};

// Waits until every request in `requests` has completed (as MPI_Waitall, statuses
// ignored). MPI errors throw as MPI_CHECK does.
void wait_all_backing_off(std::span<MPI_Request> requests, const PollBackoff& backoff = {});

// Returns once every rank of `comm` has called it (a nonblocking barrier waited for as
// above). A collective that follows starts with every rank present, so its own blocking
// poll is short: the waiting for late ranks happens here, asleep.
void wait_for_every_rank(MPI_Comm comm, const PollBackoff& backoff = {});

}  // namespace ddpscope::c10d
