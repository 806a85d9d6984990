// The three reasons the launcher ends a job that mpirun would hold forever, each a small
// policy: it is told what the job reports and, at each tick, says once whether its limit
// has passed and why. None fires after another has, or once the job is being stopped:
// the launcher asks none of them then.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ddpscope::apps {

using WatchdogClock = std::chrono::steady_clock;

// The limits, from DDPSCOPE_MPIRUN_END_GRACE_MS, DDPSCOPE_START_TIMEOUT_MS and
// DDPSCOPE_END_TIMEOUT_MS; a malformed value is an error naming it.
struct WatchdogLimits {
  std::chrono::milliseconds failure_grace{15000};
  std::chrono::milliseconds start_timeout{180000};
  std::chrono::milliseconds end_timeout{60000};
  static WatchdogLimits from_environment();
};

// After a rank reports its failure, MPI_Abort ends the job within a second or two,
// unless mpirun cannot reach the daemon of some host (its link is down): then it waits
// for it forever. Past the grace, mpirun is ended.
class FailureGraceWatchdog {
 public:
  explicit FailureGraceWatchdog(std::chrono::milliseconds grace) : grace_(grace) {}
  void rank_failed(int rank, WatchdogClock::time_point now);
  std::optional<std::string> expired(WatchdogClock::time_point now);

 private:
  std::chrono::milliseconds grace_;
  int rank_ = -1;
  WatchdogClock::time_point failed_at_{};
  bool fired_ = false;
};

// A rank stuck before training (stopped, or hung in MPI initialisation, which has no
// timeout of its own) would hold the job forever. A job that does not train (an RPC
// example, rpc-ping) starts once every rank's process group and RPC agent are up. A rank's
// reported failure disarms it: the failure grace governs then.
class StartWatchdog {
 public:
  StartWatchdog(std::chrono::milliseconds limit, WatchdogClock::time_point launched_at, bool trains = true)
      : limit_(limit), launched_at_(launched_at), trains_(trains) {}
  void started() { armed_ = false; }
  void rank_failed() { armed_ = false; }
  // `stuck_why` adds what is known about the stuck rank; asked only when the limit passes.
  template <typename Why>
  std::optional<std::string> expired(WatchdogClock::time_point now, Why&& stuck_why) {
    if (!armed_ || now - launched_at_ < limit_) return std::nullopt;
    armed_ = false;
    return message() + stuck_why();
  }

 private:
  std::chrono::milliseconds limit_;
  WatchdogClock::time_point launched_at_;
  bool trains_;
  bool armed_ = true;
  std::string message() const;
};

// MPI_Finalize waits for every rank without a timeout, so a rank stopped (or stuck)
// after the last collective would hold the others there forever. The clock starts when
// training is done and the first rank reports its end, whichever the launcher reads last:
// the two come on different pipes (stdout and stderr), and a loaded machine delivers rank
// 0's end before its "done" line (the fault suite's stopped-ending row then waited 60 s).
class EndWatchdog {
 public:
  EndWatchdog(std::chrono::milliseconds limit, int world_size)
      : limit_(limit), ended_(static_cast<size_t>(world_size), false) {}
  void training_done(WatchdogClock::time_point now);
  // A job that does not train (an RPC example, rpc-ping): armed from the start, so that the
  // first rank's end starts the clock, as training's end does for a training job.
  void trains_nothing() {
    training_done_ = true;
    trains_ = false;
  }
  void rank_ended(int rank, WatchdogClock::time_point now);
  void rank_failed() { armed_ = false; }
  std::optional<std::string> expired(WatchdogClock::time_point now);

 private:
  std::chrono::milliseconds limit_;
  std::vector<bool> ended_;
  bool training_done_ = false;
  bool trains_ = true;
  bool armed_ = true;
  std::optional<WatchdogClock::time_point> ending_since_;
};

}  // namespace ddpscope::apps
