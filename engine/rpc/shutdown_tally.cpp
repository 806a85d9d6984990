#include "shutdown_tally.h"

#include "ddpscope/error.h"

namespace ddpscope::rpc {

int64_t ShutdownTally::vote(int64_t round, int32_t voter, int64_t busy, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  Round& r = rounds_[round];
  DDPSCOPE_CHECK(r.voters.insert(voter).second, "shutdown: worker ", voter, " voted twice in round ", round);
  r.sum += busy;
  ++r.waiting;
  const auto complete = [&] { return static_cast<int>(r.voters.size()) == workers_; };
  if (complete()) {
    cv_.notify_all();
  } else if (!cv_.wait_for(lock, timeout, complete)) {
    std::string missing;
    for (int32_t w = 0; w < workers_; ++w) {
      if (!r.voters.count(w)) missing += (missing.empty() ? "" : ", ") + std::to_string(w);
    }
    if (--r.waiting == 0) rounds_.erase(round);
    throw Error(detail::concat("graceful shutdown: worker(s) ", missing, " did not reach shutdown within ",
                               timeout.count(), " ms (every worker must call rpc::shutdown)"),
                "rpc", 0);
  }
  const int64_t sum = r.sum;
  if (--r.waiting == 0) rounds_.erase(round);
  return sum;
}

}  // namespace ddpscope::rpc
