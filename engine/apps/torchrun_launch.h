// `ddpscope-cli torchrun`: a PyTorch script run as torchrun runs it (one process per
// rank with torchrun's environment), started by ddpscope's launcher so that the job has
// a collector, a run file and progress like `train`. mpirun starts `ddpscope-worker
// torchrun ...` on every rank, which turns MPI's rank variables into torchrun's, puts the
// instrumentation package (probes/python) on PYTHONPATH and becomes the interpreter.
// torch.distributed.run itself is not used: Debian's torch 1.13 launcher fails under
// Python 3.11.
#pragma once

#include <string>
#include <vector>

#include "ddpscope/default_python.h"
#include "progress_reporter.h"
#include "train_cli_options.h"

namespace CLI {
class App;  // CLI11's, included by the .cpp files that add options (compiling it is costly)
}  // namespace CLI

namespace ddpscope::apps {

struct TorchrunOptions {
  std::string python;    // the interpreter (default: default_python())
  bool module = false;   // -m: `script` is a module name, run as `python -m`
  int max_restarts = 0;  // as torchrun's --max-restarts: the whole job again after a failure
  std::string script;
  std::vector<std::string> script_args;
  std::string master_addr;  // empty: chosen by the launcher
  int master_port = 0;      // 0: chosen by the launcher
};

// The instrumentation package a job puts on PYTHONPATH: installed beside the programs,
// else in the source tree this build came from.
std::string torchrun_python_package();
// The probes' C library the package loads (DDPSCOPE_PROBES_LIB), beside the programs.
std::string torchrun_probes_library();

// The options of `ddpscope-cli torchrun` before the script; the script and its
// arguments are split off first (torchrun_script_position), so that a script's own
// --np or --out stays the script's.
void add_torchrun_options(CLI::App& cmd, TorchrunOptions& o, LaunchOptions& launch);

// In the arguments after "torchrun", the position of the script (the first word that is
// no launcher option nor an option's value; the word after "--" or after -m), or
// args.size() when there is none.
size_t torchrun_script_position(const std::vector<std::string>& args);

// Checks what can be checked before anything starts (the interpreter, the script), fills
// in the master's address and port, and returns the worker's arguments.
std::vector<std::string> torchrun_worker_arguments(TorchrunOptions& o, const LaunchOptions& launch);

// `ddpscope-cli torchrun --check`: the checks a launch makes, then "ok".
int check_torchrun(TorchrunOptions o, const LaunchOptions& launch);

// Runs the job; after a failure (not after Ctrl-C) runs it again, up to max_restarts
// times, as torchrun restarts its workers: every rank anew, TORCHELASTIC_RESTART_COUNT
// counting, each attempt into a run file of its own (RUN.restart<N>.ddprun beside
// --out). Returns the CLI's exit code: the last attempt's.
int run_torchrun(TorchrunOptions o, LaunchOptions launch, ProgressStyle style);

// The run file of restart `attempt` (1, 2, ...) of a job whose first run file is `out`.
std::string restart_run_file(const std::string& out, int attempt);

// The environment variables a torch job reads that mpirun passes on to other hosts.
const char* const* torch_environment_names();

// One rank (under mpirun): sets torchrun's environment and becomes the interpreter.
// Returns only on failure, with the exit code.
int torchrun_worker(int argc, char** argv);

}  // namespace ddpscope::apps
