#include "job_launcher.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "collector_process.h"
#include "job_monitor.h"
#include "mpirun_leftovers.h"
#include "process_supervisor.h"
#include "hostfile.h"
#include "run_file_claim.h"
#include "run_workspace.h"
#include "torchrun_launch.h"
#include "ddpscope/error.h"
#include "rpc/listen_address.h"
#include "worker_protocol.h"

namespace ddpscope::apps {
namespace {

namespace fs = std::filesystem;

// An mpirun killed (after a stop's grace) leaves its session directory and its ranks'
// shared-memory segments for good (mpirun_leftovers.h): they go, and the user is told.
void tidy_after_killed_mpirun(pid_t mpirun) noexcept try {
  const MpirunLeftovers left = remove_mpirun_leftovers(mpirun);
  if (left.removed.empty()) return;
  std::fprintf(stderr, "launcher: mpirun was killed before its own cleanup; removed what it left (%zu %s, %.1f MB)\n",
               left.removed.size(), left.removed.size() == 1 ? "path" : "paths", static_cast<double>(left.bytes) / 1e6);
} catch (const std::exception& e) {  // tidying is a courtesy: the job's outcome comes first
  std::fprintf(stderr, "launcher: could not remove what the killed mpirun left: %s\n", e.what());
}

// The address of this host that a job's other hosts reach it on: the local end of the
// route to the first of them that is not this host. 127.0.0.1 when every host is this
// one; empty when a host does not resolve.
std::string address_towards_hosts(const Hostfile& hosts) {
  for (const auto& h : hosts.hosts) {
    const std::string local = rpc::local_address_towards(h.host);
    if (local.empty()) return {};
    if (local.rfind("127.", 0) != 0) return local;
  }
  return "127.0.0.1";
}

}  // namespace

std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string p(path);
  size_t start = 0;
  while (start <= p.size()) {
    const size_t end = p.find(':', start);
    const fs::path candidate = fs::path(p.substr(start, end - start)) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return {};
}

JobLauncher::JobLauncher(LaunchOptions launch) : launch_(std::move(launch)) {
  DDPSCOPE_CHECK(launch_.np >= 1, "--np must be at least 1, got ", launch_.np);
  DDPSCOPE_CHECK(launch_.backend == "mpi" || launch_.backend == "nccl", "--backend: unknown backend '", launch_.backend,
                 "'; choose mpi or nccl");
  DDPSCOPE_CHECK(launch_.hostfile.empty() || fs::exists(launch_.hostfile), "--hostfile: '", launch_.hostfile,
                 "' does not exist");
  if (!launch_.hostfile.empty()) {
    // Read here: mpirun's words for a bad hostfile are ORTE internals, after the run file
    // was made. Slots bound the world size as cores do on one machine.
    const int slots = read_hostfile(launch_.hostfile).total_slots();
    DDPSCOPE_CHECK(
        slots < 0 || launch_.np <= slots || (launch_.oversubscribe && launch_.np <= kMaxRanksPerCore * slots), "--np ",
        launch_.np, " ranks is more than the ", slots, " slots of --hostfile '", launch_.hostfile, "'",
        launch_.oversubscribe ? detail::concat(" allow even with --oversubscribe (", kMaxRanksPerCore, " per slot, ",
                                               kMaxRanksPerCore * slots, ")")
                              : std::string(""),
        "; use fewer ranks, add hosts or slots", launch_.oversubscribe ? "" : ", or add --oversubscribe");
  }
  // On one machine, mpirun starts whatever it is asked for: 100,000 ranks load it for
  // minutes before anything fails. A few ranks per core are fine (tests run 4 on 2).
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  DDPSCOPE_CHECK(!launch_.hostfile.empty() || launch_.oversubscribe || launch_.np <= kMaxRanksPerCore * cores, "--np ",
                 launch_.np, " ranks on this machine's ", cores, cores == 1 ? " core" : " cores", " is more than ",
                 kMaxRanksPerCore, " per core (", kMaxRanksPerCore * cores,
                 "); use fewer ranks, spread them with --hostfile, or add --oversubscribe");
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  worker_path_ = (self.parent_path() / "ddpscope-worker").string();
  DDPSCOPE_CHECK(!ec && fs::exists(worker_path_), "the rank program ddpscope-worker was not found next to ",
                 self.string(), "; build the whole project (cmake --build build)");
  mpirun_path_ = find_executable("mpirun");
  DDPSCOPE_CHECK(!mpirun_path_.empty(),
                 "mpirun was not found on PATH; install openmpi-bin "
                 "(bash packaging/install-deps.sh)");
}

namespace {

// OpenBLAS starts its thread pool when it loads, before a rank's main() can ask for fewer
// threads, and each pool thread spins on sched_yield for about 0.1 s: a 100-iteration
// 2-rank job used 480 ms of CPU, 310 ms with the pool sized to the rank's math threads
// (`--threads`, 1 unless given), its iterations no slower. A value the user set is passed
// on as it is. Not for torchrun's Python ranks, whose BLAS threads are the script's own.
void add_blas_threads(std::vector<std::string>& cmd, const std::vector<std::string>& worker_args) {
  if (!worker_args.empty() && worker_args.front() == "torchrun") return;
  if (std::getenv("OPENBLAS_NUM_THREADS")) {
    cmd.insert(cmd.end(), {"-x", "OPENBLAS_NUM_THREADS"});
    return;
  }
  std::string threads = "1";
  for (size_t i = 0; i + 1 < worker_args.size(); ++i)
    if (worker_args[i] == "--threads") threads = worker_args[i + 1];
  cmd.insert(cmd.end(), {"-x", "OPENBLAS_NUM_THREADS=" + threads});
}

}  // namespace

std::vector<std::string> JobLauncher::command(const TrainOptions& train) const {
  return command_with(train_arguments(train, launch_));
}

std::vector<std::string> JobLauncher::command_with(const std::vector<std::string>& worker_args,
                                                   const char* const* more_environment) const {
  std::vector<std::string> cmd = {mpirun_path_, "-np", std::to_string(launch_.np)};
  if (!launch_.hostfile.empty()) {
    cmd.insert(cmd.end(), {"--hostfile", launch_.hostfile});
    if (launch_.oversubscribe) cmd.push_back("--oversubscribe");  // more ranks than slots, as asked
  } else if (launch_.np > static_cast<int>(std::thread::hardware_concurrency())) {
    cmd.push_back("--oversubscribe");  // more ranks than cores on this one machine
  }
  if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
  // Ranks run one math thread each; pinning them to cores only helps when nothing else
  // runs, and hurts when oversubscribed.
  cmd.insert(cmd.end(), {"--bind-to", "none"});
  // Every chunk of a rank's output starts with its tag, so that RankLines can put lines
  // that mpirun cut into pieces back together before anything reads them.
  cmd.push_back("--tag-output");
  for (const char* var :
       {"OPENBLAS_CORETYPE", "DDPSCOPE_BLAS_CORE_CHOSEN", "DDPSCOPE_PG_TIMEOUT_MS", "DDPSCOPE_DEBUG", "DDPSCOPE_FAULT",
        "DDPSCOPE_DATA_DIR", "DDPSCOPE_MPI_RING", "DDPSCOPE_RPC_TRANSPORT", "DDPSCOPE_ARRIVAL_BOARD"}) {
    if (std::getenv(var)) cmd.insert(cmd.end(), {"-x", var});
  }
  for (const char* const* var = CollectorProcess::environment_names(); *var; ++var) {
    if (std::getenv(*var)) cmd.insert(cmd.end(), {"-x", *var});
  }
  for (const char* const* var = more_environment; var && *var; ++var) {
    if (std::getenv(*var)) cmd.insert(cmd.end(), {"-x", *var});
  }
  add_blas_threads(cmd, worker_args);
  cmd.push_back(worker_path_);
  for (auto& a : worker_args)
    cmd.push_back(a);
  return cmd;
}

int JobLauncher::run(const TrainOptions& train, ProgressStyle style) {
  JobMonitor::Settings settings{launch_.np, train.iters, style, launch_.log_every};
  settings.limits = WatchdogLimits::from_environment();
  return run_command(command(train), options_json(train, launch_).dump(), train.model, settings);
}

int JobLauncher::run_mode(const std::vector<std::string>& worker_args, const nlohmann::json& config,
                          const std::string& model) {
  JobMonitor::Settings settings{launch_.np, 0, ProgressStyle::Lines, launch_.log_every};
  settings.training = false;
  settings.limits = WatchdogLimits::from_environment();
  return run_command(command_with(worker_args), config.dump(), model, settings);
}

int JobLauncher::run_script(const std::vector<std::string>& worker_args, const nlohmann::json& config,
                            const std::string& model, ProgressStyle style) {
  JobMonitor::Settings settings{launch_.np, 0, style, launch_.log_every};
  settings.script = true;
  settings.limits = WatchdogLimits::from_environment();
  return run_command(command_with(worker_args, torch_environment_names()), config.dump(), model, settings);
}

std::unique_ptr<CollectorProcess> JobLauncher::start_collector(const std::string& run_file,
                                                               const std::string& config_json, const std::string& model,
                                                               const std::string& backend) const {
  probes::RunDescription run{config_json, launch_.np, backend, model};
  // Ranks on other hosts reach the collector through the network, not loopback: on the
  // address given, else on the one this host's route to the job's hosts leaves from.
  // Never on every interface: the collector accepts no one but the job's ranks.
  const char* env_address = std::getenv("DDPSCOPE_COLLECTOR_ADDRESS");
  std::string address = !launch_.collector_address.empty() ? launch_.collector_address
                        : env_address && *env_address      ? std::string(env_address)
                        : launch_.hostfile.empty()         ? std::string("127.0.0.1")
                                                           : address_towards_hosts(read_hostfile(launch_.hostfile));
  DDPSCOPE_CHECK(!address.empty(), "cannot tell which address of this host the hosts of --hostfile '", launch_.hostfile,
                 "' reach it on (a host name does not resolve?); pass --collector-address");
  auto collector = std::make_unique<CollectorProcess>(run_file, run, address);
  std::printf("run file: %s\n", run_file.c_str());
  std::fflush(stdout);
  return collector;
}

int JobLauncher::run_command(const std::vector<std::string>& cmd, const std::string& config_json,
                             const std::string& model, const JobMonitor::Settings& settings) {
  std::unique_ptr<probes::RunFileClaim> claim;  // held until the job has ended
  std::unique_ptr<CollectorProcess> collector;
  if (launch_.probes) {
    claim = probes::claim_run_file(launch_.out, launch_.force);
    collector = start_collector(claim->path(), config_json, model, settings.script ? "torch" : launch_.backend);
  }
  ProcessSupervisor job(cmd);
  job.start();  // from here SIGUSR1 asks for the next iteration's autograd graph
  JobMonitor monitor(settings, collector.get());
  const int status = job.run(monitor.events(job));
  if (WIFSIGNALED(status) && cmd.front() == mpirun_path_) tidy_after_killed_mpirun(job.pid());
  return monitor.finish(status);
}

}  // namespace ddpscope::apps
