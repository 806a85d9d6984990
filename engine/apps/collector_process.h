// CollectorProcess: the launcher's handle on the job's ddpscope-collector. start() runs
// it in its own process group (a terminal's Ctrl-C is the launcher's to handle), waits
// for its endpoints, and exports them with a fresh run token to the environment the
// ranks inherit. finish() reports the job's outcome and waits for it to store the last
// batches. When the collector died during the job, finish() marks the run itself.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "run_store_writer.h"

namespace ddpscope::apps {

class CollectorProcess {
 public:
  // bind_host: the address ranks reach it on ("*" for every interface, multi-host jobs).
  CollectorProcess(const std::string& run_file, const probes::RunDescription& run, const std::string& bind_host);
  ~CollectorProcess();  // kills it if finish() was not called
  CollectorProcess(const CollectorProcess&) = delete;
  CollectorProcess& operator=(const CollectorProcess&) = delete;

  // Environment variables the ranks need (mpirun -x).
  static const char* const* environment_names();
  pid_t pid() const { return pid_; }
  bool alive();
  // Asks every rank to record its next iteration's autograd graph.
  void request_graph();
  // Asks every rank for every thread's stack now.
  void request_stacks();
  // The ranks' processes as the launcher saw them just before it ended the job (a /proc state
  // letter or "gone", by rank): reported with the outcome, kept in the run (schema 14).
  void note_rank_end_states(std::map<int, std::string> states) { rank_end_states_ = std::move(states); }
  // Reports how the job ended (run_end.h); `dropped_by_rank` counts what ranks could not
  // ship (used only when the collector is gone). Then merges the flight recorder's dumps
  // the ranks left beside the run file into it.
  void finish(const probes::RunEnd& end, const std::vector<std::pair<int, uint64_t>>& dropped_by_rank);
  const std::string& run_file() const { return run_file_; }

 private:
  void send_request(const std::string& line);  // one JSON line on the collector's stdin
  void finish_run(const probes::RunEnd& end, const std::vector<std::pair<int, uint64_t>>& dropped_by_rank);
  void merge_flight_dumps();

  std::string run_file_;
  std::map<int, std::string> rank_end_states_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  bool exited_ = false;
  int exit_status_ = 0;
};

}  // namespace ddpscope::apps
