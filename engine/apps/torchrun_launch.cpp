#include "torchrun_launch.h"

#include <CLI/CLI.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "ddpscope/error.h"
#include "hostfile.h"
#include "job_launcher.h"
#include "tensor/blas_kernels.h"
#include "worker_protocol.h"

namespace ddpscope::apps {
namespace {

namespace fs = std::filesystem;

// The launcher's options that take a value: their value is not the script.
const std::set<std::string> kValueOptions = {
    "--np",        "--hostfile",          "--out",         "--python",      "--progress",
    "--log-every", "--collector-address", "--master-addr", "--master-port", "--max-restarts"};

// A port free on this host now, for the job's rendezvous (torch's TCPStore on rank 0):
// jobs side by side (tests, two users) must not share torchrun's fixed 29500. Taken
// below the kernel's ephemeral range (32768 and up), where the ports that the collector
// and every connection are given come from: one of those could take a port chosen there
// before the store binds it. A random start keeps two jobs launched together apart.
int free_port() {
  constexpr int kFirst = 29500, kCount = 3000;
  std::random_device random;
  const int start = static_cast<int>(random() % kCount);
  for (int i = 0; i < kCount; ++i) {
    const int port = kFirst + (start + i) % kCount;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    DDPSCOPE_CHECK(fd >= 0, "cannot open a socket to choose the job's MASTER_PORT: ", std::strerror(errno));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);  // as the store binds it
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    close(fd);
    if (free) return port;
  }
  DDPSCOPE_CHECK(false, "no free port in ", kFirst, "-", kFirst + kCount - 1,
                 " for the job's MASTER_PORT; pass --master-port");
  return 0;
}

fs::path own_folder() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).parent_path();
}

void set_from(const char* name, const char* mpi_name) {
  if (const char* v = std::getenv(mpi_name)) setenv(name, v, 1);
}

void prepend_path(const char* name, const std::string& folder) {
  const char* old = std::getenv(name);
  setenv(name, old && *old ? (folder + ":" + old).c_str() : folder.c_str(), 1);
}

}  // namespace

std::string torchrun_python_package() {
  const fs::path installed = own_folder() / "../share/ddpscope/python";
  if (fs::exists(installed / "sitecustomize.py")) return fs::weakly_canonical(installed).string();
  return DDPSCOPE_SOURCE_PYTHON_DIR;
}

std::string torchrun_probes_library() {
  return (own_folder() / "../lib/libddpscope_probes_c.so").lexically_normal().string();
}

void add_torchrun_options(CLI::App& cmd, TorchrunOptions& o, LaunchOptions& launch) {
  cmd.add_option("--np", launch.np, "Processes (ranks), as torchrun's --nproc-per-node on one host")
      ->check(CLI::Range(1, 4096));
  cmd.add_option("--hostfile", launch.hostfile, "mpirun hostfile: ranks spread over its hosts (rank 0 on the first)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--collector-address", launch.collector_address,
                 "Address the ranks reach the run's collector on (multi-host jobs)");
  cmd.add_option("--python", o.python, "The interpreter, any python with torch (default: " + default_python() + ")");
  cmd.add_option("--master-addr", o.master_addr, "MASTER_ADDR (default: 127.0.0.1, or the hostfile's first host)");
  cmd.add_option("--master-port", o.master_port, "MASTER_PORT (default: a free port)")->check(CLI::Range(1, 65535));
  cmd.add_option("--out", launch.out, "Run file for the job's events (default: a new file in the workspace folder)");
  cmd.add_flag("--force", launch.force, "Replace the run that the --out file already holds");
  cmd.add_flag("--oversubscribe", launch.oversubscribe, "Allow more than 4 ranks per core of this machine");
  cmd.add_option("--progress", launch.progress, "Progress display: auto, bar, lines or json")
      ->check(CLI::IsMember({"auto", "bar", "lines", "json"}));
  cmd.add_option("--log-every", launch.log_every, "Iterations between progress lines")->check(CLI::PositiveNumber);
  cmd.add_flag("-m,--module", o.module, "Run SCRIPT as a module (python -m SCRIPT), as torchrun's -m");
  cmd.add_option("--max-restarts", o.max_restarts,
                 "After a failure, run the whole job again up to this many times, as torchrun does (each attempt "
                 "into its own run file; TORCHELASTIC_RESTART_COUNT tells the script which)")
      ->check(CLI::Range(0, 1000));
  cmd.add_flag_function(
      "--measure-links", [](std::int64_t) { ::setenv("DDPSCOPE_MEASURE_LINKS", "1", 1); },
      "After init_process_group, time each pair of neighbouring ranks and of hosts (the links' ceiling, "
      "ddpscope-cli links)");
  cmd.add_option("SCRIPT", o.script, "The training script (its arguments follow it)")->required();
}

size_t torchrun_script_position(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i + 1;
    if (a.empty() || a[0] != '-') return i;
    if (a == "-m" || a == "--module") continue;  // the module name is the script
    if (a.find('=') == std::string::npos && kValueOptions.count(a)) ++i;
  }
  return args.size();
}

std::vector<std::string> torchrun_worker_arguments(TorchrunOptions& o, const LaunchOptions& launch) {
  if (o.python.empty()) o.python = default_python();
  const std::string python = find_executable(o.python);
  DDPSCOPE_CHECK(!python.empty(), "--python: '", o.python,
                 "' is not an interpreter that can be run; pass the path of a python that has torch");
  o.python = python;
  if (!o.module) {
    DDPSCOPE_CHECK(fs::is_regular_file(o.script), "the script '", o.script,
                   "' does not exist (ddpscope-cli torchrun [OPTIONS] SCRIPT [SCRIPT ARGS])");
    o.script = fs::absolute(o.script).string();  // the ranks may start in another folder
  }
  if (o.master_addr.empty()) {
    o.master_addr = launch.hostfile.empty() ? "127.0.0.1" : read_hostfile(launch.hostfile).hosts.front().host;
  }
  if (o.master_port == 0) {
    const char* env = std::getenv("MASTER_PORT");
    o.master_port = env && *env ? std::atoi(env) : free_port();
  }
  std::vector<std::string> a = {
      "torchrun", "--master-addr", o.master_addr, "--master-port", std::to_string(o.master_port),
      "--python", o.python,        "--"};
  if (o.module) a.push_back("-m");
  a.push_back(o.script);
  a.insert(a.end(), o.script_args.begin(), o.script_args.end());
  return a;
}

int check_torchrun(TorchrunOptions o, const LaunchOptions& launch) {
  torchrun_worker_arguments(o, launch);
  JobLauncher checked(launch);  // the ranks, the hostfile, mpirun
  std::printf("ok\n");
  return 0;
}

std::string restart_run_file(const std::string& out, int attempt) {
  if (out.empty()) return out;  // a fresh file in the workspace each time
  fs::path path(out);
  const std::string stem = path.extension() == ".ddprun" ? path.stem().string() : path.filename().string();
  return (path.parent_path() / (stem + ".restart" + std::to_string(attempt) + ".ddprun")).string();
}

int run_torchrun(TorchrunOptions o, LaunchOptions launch, ProgressStyle style) {
  const std::string first_out = launch.out;
  const bool port_chosen = o.master_port != 0;
  const std::string name = o.module ? o.script : fs::path(o.script).filename().string();
  setenv("TORCHELASTIC_MAX_RESTARTS", std::to_string(o.max_restarts).c_str(), 1);
  for (int attempt = 0;; ++attempt) {
    setenv("TORCHELASTIC_RESTART_COUNT", std::to_string(attempt).c_str(), 1);
    if (attempt > 0) launch.out = restart_run_file(first_out, attempt);
    if (!port_chosen) o.master_port = 0;  // a fresh one: the last store's may linger
    const std::vector<std::string> worker_args = torchrun_worker_arguments(o, launch);
    const nlohmann::json config = {{"job", "torchrun"},
                                   {"script", o.script},
                                   {"module", o.module},
                                   {"args", o.script_args},
                                   {"np", launch.np},
                                   {"python", o.python},
                                   {"master_addr", o.master_addr},
                                   {"master_port", o.master_port},
                                   {"restart", attempt},
                                   {"max_restarts", o.max_restarts}};
    const int code = JobLauncher(launch).run_script(worker_args, config, "torch " + name, style);
    // 130: stopped by the user, who asked for no more.
    if (code == 0 || code == 130 || attempt >= o.max_restarts) return code;
    std::fprintf(stderr, "restarting the job (restart %d of %d, as torchrun's --max-restarts)\n", attempt + 1,
                 o.max_restarts);
    std::fflush(stderr);
  }
}

const char* const* torch_environment_names() {
  static const char* const names[] = {"PYTHONPATH",
                                      "OMP_NUM_THREADS",
                                      "CUDA_VISIBLE_DEVICES",
                                      "NCCL_DEBUG",
                                      "NCCL_SOCKET_IFNAME",
                                      "GLOO_SOCKET_IFNAME",
                                      "TORCH_CPP_LOG_LEVEL",
                                      "TORCH_DISTRIBUTED_DEBUG",
                                      "TORCH_SHOW_CPP_STACKTRACES",
                                      "PYTHONUNBUFFERED",
                                      "DDPSCOPE_DEVICE",
                                      "TORCHELASTIC_RESTART_COUNT",
                                      "TORCHELASTIC_MAX_RESTARTS",
                                      "DDPSCOPE_MEASURE_LINKS",
                                      nullptr};
  return names;
}

int torchrun_worker(int argc, char** argv) {
  // argv: torchrun --master-addr A --master-port P --python PY -- [-m] SCRIPT ARGS...
  std::string master_addr, master_port, python;
  int i = 1;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; i += 2) {
    DDPSCOPE_CHECK(i + 1 < argc, "ddpscope-worker torchrun: ", argv[i], " needs a value");
    const std::string name = argv[i];
    if (name == "--master-addr")
      master_addr = argv[i + 1];
    else if (name == "--master-port")
      master_port = argv[i + 1];
    else if (name == "--python")
      python = argv[i + 1];
    else
      DDPSCOPE_CHECK(false, "ddpscope-worker torchrun: unknown option ", name);
  }
  DDPSCOPE_CHECK(i + 1 < argc && !python.empty(), "ddpscope-worker torchrun: no script after --");
  // torchrun's environment, from MPI's.
  set_from("RANK", "OMPI_COMM_WORLD_RANK");
  set_from("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE");
  set_from("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
  set_from("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE");
  set_from("GROUP_RANK", "OMPI_COMM_WORLD_NODE_RANK");
  set_from("ROLE_RANK", "OMPI_COMM_WORLD_RANK");
  set_from("ROLE_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE");
  setenv("MASTER_ADDR", master_addr.c_str(), 1);
  setenv("MASTER_PORT", master_port.c_str(), 1);
  setenv("TORCHELASTIC_RESTART_COUNT", "0", 0);
  // As torchrun: one math thread per process when several share a host, unless asked.
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (local_size && std::atoi(local_size) > 1) setenv("OMP_NUM_THREADS", "1", 0);
  // A script's prints reach the launcher as they happen, a line at a time, as they would a
  // terminal: the package's sitecustomize makes stdout line-buffered. Unbuffered (-u) would
  // write print()'s pieces one by one, and mpirun would interleave the ranks' lines mid-line.
  setenv("DDPSCOPE_LINE_BUFFERED", "1", 1);
  prepend_path("PYTHONPATH", torchrun_python_package());
  setenv("DDPSCOPE_PROBES_LIB", torchrun_probes_library().c_str(), 0);
  setenv("DDPSCOPE_TORCHRUN", "1", 1);  // the package reports progress to the launcher
  forget_preferred_blas_core();         // torch's OpenBLAS picks its kernels as it would

  std::vector<char*> args = {python.data()};
  for (++i; i < argc; ++i)
    args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(python.c_str(), args.data());
  const char* rank = std::getenv("RANK");
  job_events::write_event(stderr, job_events::Error{rank ? std::atoi(rank) : -1,
                                                    detail::concat("cannot start the interpreter '", python,
                                                                   "': ", std::strerror(errno), "; pass --python")});
  return 127;
}

}  // namespace ddpscope::apps
