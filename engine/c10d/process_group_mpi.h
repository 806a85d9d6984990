// ProcessGroupMPI: the ProcessGroup on OpenMPI, for CPU tensors.
//
// Each group owns a duplicated communicator and two worker threads: one runs the
// collectives in issue order (so every rank runs them in the same order), one completes
// point-to-point ops, which are posted at once on the calling thread (so a send and a
// recv issued in either order on two ranks cannot deadlock). Idle workers sleep on a
// condition variable: an idle group uses no CPU.
//
// A watchdog thread fails any op that outlives its timeout with an error naming the op,
// its sequence number, shape and dtype, the rank and what it waited for. An MPI op
// cannot be cancelled, so the group is then broken: the job ends (MPI_Abort) once the
// error has been delivered and a grace period (DDPSCOPE_ABORT_GRACE_MS, default 5000)
// has passed, or at once when the group is destroyed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "host_arrival_board.h"
#include "mpi_environment.h"
#include "process_group.h"

namespace ddpscope::c10d {

class ProcessGroupMPI : public ProcessGroup {
 public:
  // The group of every rank in MPI_COMM_WORLD.
  static std::shared_ptr<ProcessGroupMPI> create_world(ProcessGroupOptions options);
  // Takes ownership of `comm`.
  ProcessGroupMPI(MpiComm comm, ProcessGroupOptions options);
  ~ProcessGroupMPI() override;

  std::string backend_name() const override { return "mpi"; }
  DDPSCOPE_PROCESS_GROUP_OVERRIDES

  MPI_Comm comm() const { return comm_.get(); }
  // Whether sums go around ring_allreduce.h's ring (ranks on several hosts).
  bool uses_ring() const { return ring_comm_.get() != MPI_COMM_NULL; }
  // Whether its ranks meet before a collective on a shared futex (host_arrival_board.h).
  bool uses_arrival_board() const { return arrival_board_ != nullptr; }

 private:
  // What ranks compare in debug mode before a collective.
  struct Fingerprint {
    int32_t op = 0;
    int32_t dtype = -1;
    int32_t ndim = 0;
    int32_t root = -1;
    uint64_t seq = 0;
    int64_t numel = 0;
    int64_t dims[6] = {};
  };
  struct Op {
    std::shared_ptr<Work> work;
    std::function<void()> run;
    Milliseconds timeout;
    Fingerprint fingerprint;
    std::string waits_for;  // for the timeout message
    int64_t bytes = -1;     // for the probes
    int peer = -1;
    int64_t record_id = -1;  // the flight recorder's
  };
  struct Lane {
    std::string name;
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<Op> queue;
    bool stop = false;
    std::shared_ptr<Work> in_flight;
    std::string in_flight_waits_for;
    std::chrono::steady_clock::time_point deadline;
    Milliseconds in_flight_timeout{0};
    std::thread thread;
  };

  std::shared_ptr<Work> enqueue_collective(OpType type, const Tensor& described, const std::string& extra,
                                           std::vector<Tensor> outputs, Milliseconds timeout, std::function<void()> run,
                                           int root = -1);
  std::shared_ptr<Work> enqueue_p2p(OpType type, const Tensor& tensor, int peer, int tag, bool is_send);
  void push(Lane& lane, Op op);
  void run_lane(Lane& lane);
  void check_consistency(const Op& op);
  void watchdog_loop();
  void fail_timed_out(Lane& lane);
  void check_usable(const char* op) const;
  void check_cpu(const Tensor& t, const char* op) const;
  std::string fingerprint_str(int rank, const Fingerprint& f) const;

  MpiComm comm_;
  MpiComm check_comm_;  // separate, so debug checks never interleave with real ops
  // Set when sums go around the ring of ring_allreduce.h (ranks on several hosts).
  MpiComm ring_comm_;
  // Ranks on one host wait for each other here before a collective (host_arrival_board.h).
  std::unique_ptr<HostArrivalBoard> arrival_board_;
  std::vector<char> ring_scratch_;
  std::atomic<uint64_t> next_collective_seq_{0};
  std::atomic<uint64_t> next_p2p_seq_{0};
  Lane collectives_;
  Lane p2p_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_cv_;
  bool watchdog_stop_ = false;
  std::atomic<bool> broken_{false};
  std::string broken_reason_;
  std::chrono::steady_clock::time_point abort_at_{};
  std::thread watchdog_;
};

}  // namespace ddpscope::c10d
