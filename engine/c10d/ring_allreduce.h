// A ring allreduce (sum) over MPI point-to-point, for groups whose ranks reach each
// other over TCP.
//
// Why not MPI_Allreduce there: measured on two simulated hosts at 2 Gbit/s, once compute
// on the same cores overlaps an allreduce (as DDP's first bucket always does), OpenMPI's
// TCP transport falls into a pattern where the two directions of a link take turns (the
// sum of both stays at one direction's line rate) and stays in it for the next allreduce
// too: a 21 MB allreduce took 170-220 ms instead of 88. This ring posts each step's sends
// and receives together, a few 256 KiB segments at a time, so both directions are busy by
// construction: the same 21 MB after the same trigger took 106 ms, and DDP's step went
// from 221-231 ms to 145-148 ms.
//
// Reduce-scatter then allgather, n-1 steps each; rank r ends each step holding one more
// block's partial sum. Blocks are as even as the element count allows (any count works,
// also fewer elements than ranks).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace ddpscope::c10d {

// Measured on 2 simulated hosts at 2 Gbit/s (8 x Linear(1024), 25 MB of gradients), DDP
// vs the one-allreduce baseline, ms per iteration: 64 KiB x 4 in flight 216 / 186;
// 256 KiB x 1 166 / 176; x 4 156 / 166; x 16 147-149 / 158; x 64 145-148 / 154-159;
// 1 MiB x 4 164 / 164.
struct RingOptions {
  int64_t segment_bytes = 256 << 10;
  int window = 64;  // segments in flight each way
  // The allreduce's sequence number in its group: each step is recorded as a ring_step
  // span carrying it (the Learn tab's ring lesson replays them). -1: not numbered.
  int64_t seq = -1;
};

// Sums `data` (numel elements of T: float or double) over every rank of `comm` in place.
// `scratch` is reused between calls (one block's bytes). Blocks until done; MPI errors
// throw as MPI_CHECK does.
template <typename T>
void ring_allreduce_sum(T* data, int64_t numel, MPI_Comm comm, std::vector<char>& scratch,
                        const RingOptions& options = {});

}  // namespace ddpscope::c10d
