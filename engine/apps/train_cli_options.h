// The `train` options shared by ddpscope-cli and ddpscope-worker: one definition, so
// what the launcher passes on is exactly what the worker accepts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer.h"

namespace CLI {
class App;  // CLI11's, included by the .cpp files that add options (compiling it is costly)
}  // namespace CLI

namespace ddpscope::apps {

struct LaunchOptions {
  int np = 0;  // 0: train in this process; N: launch N ranks under mpirun
  std::string hostfile;
  // The address ranks reach the collector on, which it listens on (empty:
  // $DDPSCOPE_COLLECTOR_ADDRESS, else 127.0.0.1 on one host, or every interface and this
  // host's name with a hostfile).
  std::string collector_address;
  std::string backend = "mpi";
  int64_t log_every = 10;
  // The run file the probes write (empty: a new file in the workspace folder).
  std::string out;
  // Replace the run an existing --out file holds (otherwise such a file is refused).
  bool force = false;
  // Run more ranks than JobLauncher::kMaxRanksPerCore per core of this machine.
  bool oversubscribe = false;
  bool probes = true;
  std::string progress = "auto";  // auto | bar | lines | json (see ProgressReporter)
};

void add_train_options(CLI::App& cmd, TrainOptions& o, LaunchOptions& launch);
// --rpc-transport shm|tcp|zmq: sets DDPSCOPE_RPC_TRANSPORT, which the launcher passes on to
// every rank (transport_choice.h), for the commands whose jobs use RPC.
void add_rpc_transport_option(CLI::App& cmd);
// The job's options as JSON, stored with its run.
nlohmann::json options_json(const TrainOptions& o, const LaunchOptions& launch);
// The worker's command-line arguments for `o` (the inverse of add_train_options).
std::vector<std::string> train_arguments(const TrainOptions& o, const LaunchOptions& launch);

}  // namespace ddpscope::apps
