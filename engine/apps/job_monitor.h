// JobMonitor: follows a running job for the launcher. It reads what the ranks report on
// mpirun's two streams (start, progress, end, a rank's failure, probes' drop counts),
// shows progress, keeps mpirun's last words, arms the watchdogs, answers our signals,
// and when the job is over closes its run file and says how it ended.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "failed_collective.h"
#include "job_watchdogs.h"
#include "process_supervisor.h"
#include "progress_reporter.h"
#include "rank_lines.h"
#include "rank_state_watch.h"

namespace ddpscope::apps {

class CollectorProcess;

class JobMonitor {
 public:
  struct Settings {
    int world_size = 1;
    int64_t iterations = 0;  // 0 for jobs other than training
    ProgressStyle style = ProgressStyle::Lines;
    int64_t log_every = 10;
    bool training = true;  // training jobs report their start and end
    // A PyTorch script's job: it reports its start only at its first DDP forward (after
    // whatever loading it does first, for as long as it takes), and says no iteration
    // count or loss unless it logs one.
    bool script = false;
    WatchdogLimits limits;
  };
  // `collector` (may be null: no probes) must outlive the monitor.
  JobMonitor(const Settings& settings, CollectorProcess* collector);

  // Events for the supervisor of `job`.
  ProcessSupervisor::Events events(ProcessSupervisor& job);
  // Closes the run file and reports how the job ended (mpirun's wait status); returns
  // the CLI's exit code.
  int finish(int wait_status);

 private:
  Settings settings_;
  CollectorProcess* collector_;
  ProgressReporter progress_;
  FailureGraceWatchdog failure_grace_;
  StartWatchdog start_watchdog_;
  EndWatchdog end_watchdog_;
  double seconds_ = 0;
  int64_t stopped_at_ = -1;  // --join-throw: the iterations done when one rank ran out
  bool started_ = false;     // rank 0 reported its start
  int failed_rank_ = -1;
  probes::FailedCollective failed_collective_;  // what failed_rank_'s error typed, if a collective's
  int dead_rank_ = -1;                          // a rank mpirun saw die by a signal
  std::string dead_signal_;                     // "signal 9 (Killed)"
  std::string failure_;
  bool interrupted_ = false;
  bool gave_up_ = false;              // the launcher ended mpirun itself
  bool timed_out_ = false;            // ... because the job did not start or did not end
  std::deque<std::string> err_tail_;  // mpirun's own words about a dead rank
  std::vector<std::pair<int, uint64_t>> dropped_by_rank_;
  RankLines out_lines_;  // the ranks' lines whole, from mpirun's tagged streams
  RankLines err_lines_;
  std::optional<RankStateWatch> rank_states_;  // with a collector: the ranks' processes, for the run

  void stdout_line(const std::string& line);
  void stderr_line(const std::string& line);
  void signal(int sig, ProcessSupervisor& job);
  void tick(WatchdogClock::time_point now, ProcessSupervisor& job);
  void name_failure_from_mpirun();
  void close_run(const std::string& status, const std::string& message);
  void print_diagnosis() const;
};

}  // namespace ddpscope::apps
