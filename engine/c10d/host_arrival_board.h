// HostArrivalBoard: where the ranks of a group on one host wait for each other before a
// collective, asleep in the kernel and woken the moment the last one arrives.
//
// The group waits for late ranks before each collective so that the collective's own poll
// (OpenMPI spins) is short (mpi_wait.h). A nonblocking barrier polled with growing sleeps
// costs little CPU but notices the last arrival only at its next poll: after a 32 ms wait
// for a straggler a 1 MiB allreduce ended 1.1 ms after the last rank arrived, against
// 0.15 ms back to back (2 ranks, 2 cores), which made every gated iteration 1 ms longer and
// the what-if of `why` wrong by as much. Here each rank adds one to a counter in memory the
// group's ranks share and sleeps on it with a futex; the rank whose arrival completes the
// count wakes the others.
//
// Only where every rank of the group shares this host's memory (MPI_COMM_TYPE_SHARED) and
// every rank could map the board; otherwise create() returns null and the group keeps the
// barrier of mpi_wait.h.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace ddpscope::c10d {

// Collective over `comm`: whether every rank shares this host's memory (MPI_COMM_TYPE_SHARED),
// the same answer on every rank.
bool every_rank_on_this_host(MPI_Comm comm);

class HostArrivalBoard {
 public:
  // Collective over `comm`: every rank must call it. Null when a rank does not want one
  // (DDPSCOPE_ARRIVAL_BOARD=0 there), the ranks span hosts or the board could not be shared
  // (no /dev/shm, say); the name of the shared memory is gone from /dev/shm once every rank
  // has mapped it, so a crash leaves nothing behind.
  static std::unique_ptr<HostArrivalBoard> create(MPI_Comm comm, bool wanted = true);
  ~HostArrivalBoard();
  HostArrivalBoard(const HostArrivalBoard&) = delete;
  HostArrivalBoard& operator=(const HostArrivalBoard&) = delete;

  // This rank's arrival at its next collective; returns once every rank has arrived at it
  // (each rank calls it once per collective, in the same order). A rank that never comes
  // keeps it waiting, as the barrier did: the group's watchdog fails the collective at its
  // timeout and ends the job.
  void arrive_and_wait();

 private:
  HostArrivalBoard(void* mapping, int size) : mapping_(mapping), size_(size) {}
  std::atomic<uint32_t>& arrivals() const { return *static_cast<std::atomic<uint32_t>*>(mapping_); }

  void* mapping_;
  const int size_;
  uint32_t target_ = 0;  // the count at which this rank's current collective has every rank
};

}  // namespace ddpscope::c10d
