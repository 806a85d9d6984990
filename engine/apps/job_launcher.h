// JobLauncher: runs a training job of N ranks under mpirun and shows it as one job:
// one progress display (from rank 0's reports), Ctrl-C / SIGTERM forwarded to every
// rank (then SIGKILL after a grace period), and on failure a message naming the rank
// that failed and why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "job_monitor.h"
#include "progress_reporter.h"
#include "train_cli_options.h"

namespace ddpscope::apps {

class CollectorProcess;

// The program `name` as the shell would run it: a path when it holds a '/', else the
// first executable of that name on PATH; empty when there is none.
std::string find_executable(const std::string& name);

class JobLauncher {
 public:
  // Without a hostfile, at most this many ranks per core unless --oversubscribe.
  static constexpr int kMaxRanksPerCore = 4;
  explicit JobLauncher(LaunchOptions launch);
  // The mpirun command line for `train` (exposed for tests and --dry-run style checks).
  std::vector<std::string> command(const TrainOptions& train) const;
  // Runs the job; returns the process exit code for the CLI (0 on success).
  int run(const TrainOptions& train, ProgressStyle style);
  // Runs another mode of the rank program (`ddpscope-worker ARGS...`, e.g. rpc-ping),
  // recording into a run file described by `run` when probes are on. Lines the ranks
  // print are shown as they are.
  int run_mode(const std::vector<std::string>& worker_args, const nlohmann::json& config, const std::string& model);
  // Runs a PyTorch script (`ddpscope-worker torchrun ...`, torchrun_launch.h): progress as
  // the script's instrumentation reports it, the torch environment passed to every host.
  int run_script(const std::vector<std::string>& worker_args, const nlohmann::json& config, const std::string& model,
                 ProgressStyle style);

 private:
  LaunchOptions launch_;
  std::string worker_path_;
  std::string mpirun_path_;
  // `more_environment`: names (null-terminated) passed on besides ddpscope's own.
  std::vector<std::string> command_with(const std::vector<std::string>& worker_args,
                                        const char* const* more_environment = nullptr) const;
  std::unique_ptr<CollectorProcess> start_collector(const std::string& run_file, const std::string& config_json,
                                                    const std::string& model, const std::string& backend) const;
  int run_command(const std::vector<std::string>& cmd, const std::string& config_json, const std::string& model,
                  const JobMonitor::Settings& settings);
};

}  // namespace ddpscope::apps
