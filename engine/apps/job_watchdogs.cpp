#include "job_watchdogs.h"

#include <algorithm>

#include "ddpscope/env.h"
#include "ddpscope/error.h"
#include "ddpscope/plural.h"

namespace ddpscope::apps {
namespace {

long long whole_seconds(std::chrono::milliseconds d) { return static_cast<long long>(d.count() / 1000); }

}  // namespace

WatchdogLimits WatchdogLimits::from_environment() {
  WatchdogLimits limits;
  const auto ms = [](const char* name, std::chrono::milliseconds fallback, int64_t min) {
    return std::chrono::milliseconds(env_int(name, fallback.count(), min));
  };
  limits.failure_grace = ms("DDPSCOPE_MPIRUN_END_GRACE_MS", limits.failure_grace, 0);
  limits.start_timeout = ms("DDPSCOPE_START_TIMEOUT_MS", limits.start_timeout, 1);
  limits.end_timeout = ms("DDPSCOPE_END_TIMEOUT_MS", limits.end_timeout, 1);
  return limits;
}

void FailureGraceWatchdog::rank_failed(int rank, WatchdogClock::time_point now) {
  if (rank_ >= 0 || fired_) return;  // the first report counts
  rank_ = rank;
  failed_at_ = now;
}

std::optional<std::string> FailureGraceWatchdog::expired(WatchdogClock::time_point now) {
  if (rank_ < 0 || fired_ || now - failed_at_ < grace_) return std::nullopt;
  fired_ = true;
  return detail::concat("mpirun has not ended ", std::chrono::duration<double>(grace_).count(), " s after rank ", rank_,
                        " reported its failure: it cannot reach the ranks of some host (a host cut off from the "
                        "network?). Ending mpirun; processes on an unreachable host end when it can be reached again");
}

std::string StartWatchdog::message() const {
  if (!trains_) {
    return detail::concat("the job had not started ", whole_seconds(limit_),
                          " s after launch: a rank is stuck in its start-up (stopped, or hung in MPI initialisation "
                          "or the RPC set-up); DDPSCOPE_START_TIMEOUT_MS sets this limit");
  }
  return detail::concat("the job had not started training ", whole_seconds(limit_),
                        " s after launch: a rank is stuck before training (stopped, or hung in MPI "
                        "initialisation or the model's set-up); DDPSCOPE_START_TIMEOUT_MS sets this limit");
}

void EndWatchdog::training_done(WatchdogClock::time_point now) {
  training_done_ = true;
  if (!ending_since_ && std::find(ended_.begin(), ended_.end(), true) != ended_.end()) ending_since_ = now;
}

void EndWatchdog::rank_ended(int rank, WatchdogClock::time_point now) {
  if (rank >= 0 && rank < static_cast<int>(ended_.size())) ended_[static_cast<size_t>(rank)] = true;
  if (training_done_ && !ending_since_) ending_since_ = now;
}

std::optional<std::string> EndWatchdog::expired(WatchdogClock::time_point now) {
  if (!armed_ || !ending_since_ || now - *ending_since_ < limit_) return std::nullopt;
  armed_ = false;
  std::string stuck;
  size_t count = 0;
  for (size_t r = 0; r < ended_.size(); ++r)
    if (!ended_[r]) stuck += (count++ ? ", " : "") + std::to_string(r);
  return detail::concat(trains_ ? "training finished, but the job" : "the job", " had not exited ",
                        whole_seconds(limit_), " s after the first rank ended: MPI_Finalize waits for every rank, and ",
                        stuck.empty() ? std::string("every rank reported its end, so one is stuck in MPI's shutdown")
                                      : ranks_named(count, stuck) +
                                            (count == 1 ? " never reported its end" : " never reported their end") +
                                            (trains_ ? " (stopped, or stuck after training)" : " (stopped, or stuck)"),
                        "; every event before that is in the run file; DDPSCOPE_END_TIMEOUT_MS sets this limit");
}

}  // namespace ddpscope::apps
