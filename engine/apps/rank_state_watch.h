// RankStateWatch: the job's ranks' processes on this host, looked at twice a second while the
// job runs. It keeps each rank's last state seen while its process was alive, so that when the
// job ends (a rank's failure, a timeout, the user's stop) a rank last seen stopped by a signal
// or a debugger, which could not answer for its stack, is still said so afterwards (the run
// keeps the states: ranks.end_state, schema 14). It freezes at the first failure or stop:
// mpirun continues the stopped ranks as it ends them, which must not read as running again,
// and it may do so before the launcher hears of the failure, hence the looking beforehand.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "job_watchdogs.h"
#include "run_store_reader.h"

namespace ddpscope::apps {

class RankStateWatch {
 public:
  RankStateWatch(std::string run_file, int world_size) : run_file_(std::move(run_file)), world_size_(world_size) {}

  // Looks at the ranks' processes when 500 ms have passed since the last look.
  void poll(WatchdogClock::time_point now);
  // Looks once more (the launcher is about to end the job), then keeps what it has. That last
  // look never turns a rank seen stopped into a running one: by then mpirun may have
  // continued it to end it (a loaded machine delays the launcher's hearing of the failure).
  void freeze();
  // By rank: the last /proc state letter seen while the process was alive ('T', 't', 'S',
  // 'R', 'D'); a rank never seen alive here (another host's) is absent.
  const std::map<int, std::string>& states() const { return states_; }

 private:
  void look(bool last = false);

  std::string run_file_;
  int world_size_;
  std::vector<probes::RankRow> ranks_;  // read from the run until every rank has joined
  std::map<int, std::string> states_;
  WatchdogClock::time_point next_look_{};
  bool frozen_ = false;
};

}  // namespace ddpscope::apps
