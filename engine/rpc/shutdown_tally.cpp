#include "shutdown_tally.h"

#include <algorithm>

#include "ddpscope/error.h"

namespace ddpscope::rpc {

int64_t ShutdownTally::vote(int64_t round, int32_t voter, int64_t busy, std::chrono::milliseconds wait,
                            const std::function<std::vector<int32_t>(const std::vector<int32_t>&)>& unanswering) {
  std::unique_lock<std::mutex> lock(mutex_);
  Round& r = rounds_[round];
  if (r.voters.insert(voter).second) r.sum += busy;  // a vote again is the same vote
  // Rounds are kept (a shutdown has a few): a voter told to wait may vote again after the
  // round completed, and must find its sum, not a new round.
  const auto complete = [&] { return static_cast<int>(r.voters.size()) == workers_; };
  if (complete()) {
    cv_.notify_all();
  } else if (!cv_.wait_for(lock, wait, complete)) {
    std::vector<int32_t> missing;
    for (int32_t w = 0; w < workers_; ++w)
      if (!r.voters.count(w)) missing.push_back(w);
    lock.unlock();  // the asking is RPC: others vote meanwhile
    const std::vector<int32_t> unanswered = unanswering(missing);
    lock.lock();
    std::vector<int32_t> gone;
    for (int32_t w : missing) {
      const bool missed = std::find(unanswered.begin(), unanswered.end(), w) != unanswered.end();
      misses_[w] = missed ? misses_[w] + 1 : 0;
      if (misses_[w] >= kMissesBeforeGone) gone.push_back(w);
    }
    if (!complete()) {
      if (gone.empty()) return kStillWaiting;  // still working: the voter asks again
      std::string names;
      for (int32_t w : gone)
        names += (names.empty() ? "" : ", ") + std::to_string(w);
      throw Error(detail::concat("graceful shutdown: worker(s) ", names,
                                 " did not reach shutdown and do not answer "
                                 "(stopped, or hung; every worker must call rpc::shutdown)"),
                  "rpc", 0);
    }
  }
  r.answered.insert(voter);
  cv_.notify_all();
  return r.sum;
}

void ShutdownTally::wait_until_all_answered(int64_t round, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  Round& r = rounds_[round];
  cv_.wait_for(lock, wait, [&] { return static_cast<int>(r.answered.size()) == workers_; });
}

}  // namespace ddpscope::rpc
