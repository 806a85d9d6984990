// Wait versus transfer: a rank's time in a collective is first spent waiting for the other
// ranks to arrive (from its own start to the last rank's start) and only then moving data
// (from the last arrival to its own end). When one rank is slow, the others' "communication"
// is mostly waiting for it: counted as transfer, it blames the network, or the waiting rank.
//
// The collectives matched here are DDP's bucket allreduces, by (iteration, bucket) across
// ranks: every rank reduces the same buckets in the same order. A rank arrives when its
// allreduce starts (on the GPU when its NCCL kernel starts, as BucketTiming has it).
// Each iteration's exposed communication is then split into exposed wait (its exposed
// intervals that fall in a wait) and exposed transfer (the rest), which add up to it.
#pragma once

#include "overlap_analysis.h"

namespace ddpscope::probes {

// Fills exposed_wait_ms and exposed_transfer_ms of every iteration whose buckets every rank
// of the analysis reduced (wait_known); other iterations keep wait_known = false. Needs
// the analysis of every rank: one rank's alone has no one to wait for. `world_size`: the
// job's ranks when the run holds fewer (2 traces of a 128-GPU job): each bucket's group is
// then that size, and its last arrival only the last of the ranks recorded.
void split_wait_and_transfer(RunAnalysis& analysis, int world_size = 0);

// Whether a rank mostly waits, from its means (ms): its exposed wait is over half its
// exposed communication and over 5% of its iteration. The one rule behind the words
// "a rank that mostly waits is not slow itself" in `stats` and on the Summary.
bool mostly_waits(double exposed_wait_ms, double exposed_comm_ms, double iteration_ms);

}  // namespace ddpscope::probes
