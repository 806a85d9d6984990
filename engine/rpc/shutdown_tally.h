// ShutdownTally: worker 0's count of the votes of a graceful shutdown.
//
// Graceful shutdown ends when every worker is quiet at once. Each worker, once quiet
// locally, sends worker 0 a vote with the number of replies it still waits for; worker 0
// answers each vote when all workers have voted in that round, with the round's sum. A
// sum of zero ends shutdown everywhere; otherwise everyone waits until quiet and votes
// again. A worker still working (its agent answers, its program has not reached shutdown)
// is waited for however long it works: worker 0 answers a vote it cannot decide yet with
// kStillWaiting after a while, and the voter votes again; a worker that does not answer
// kMissesBeforeGone asks in a row (stopped, hung) ends the wait, named. One missed answer
// is not enough: a worker that still works on a loaded machine (the ask waits a quarter of
// the RPC timeout) once missed it and the others stopped under it. The votes travel over RPC rather than an MPI
// allreduce because a rank blocked in MPI spins a core (BUILD-NOTES.md), and on a small machine that core is the one
// the still-working ranks need.
//
// Thread-safe: the votes of one round arrive on different pool threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace ddpscope::rpc {

class ShutdownTally {
 public:
  explicit ShutdownTally(int workers) : workers_(workers) {}

  // Worker `voter`'s vote in `round` (again: the same vote, waiting on): blocks until every
  // worker has voted in it and returns the sum, or, after `wait`, asks `unanswering` which
  // of the workers that have not voted do not answer: none that missed kMissesBeforeGone
  // asks in a row, and it returns kStillWaiting; some, and it throws naming them.
  static constexpr int64_t kStillWaiting = -1;
  static constexpr int kMissesBeforeGone = 3;
  int64_t vote(int64_t round, int32_t voter, int64_t busy, std::chrono::milliseconds wait,
               const std::function<std::vector<int32_t>(const std::vector<int32_t>&)>& unanswering);
  // Worker 0, once a round ended shutdown: waits (up to `wait`) until every worker has been
  // answered its sum, so that none that was between two votes finds worker 0 gone.
  void wait_until_all_answered(int64_t round, std::chrono::milliseconds wait);

 private:
  struct Round {
    std::set<int32_t> voters;
    std::set<int32_t> answered;  // voters given the round's sum
    int64_t sum = 0;
  };
  const int workers_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<int64_t, Round> rounds_;
  std::map<int32_t, int> misses_;  // asks in a row a worker did not answer
};

}  // namespace ddpscope::rpc
