#include "job_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <thread>
#include <tuple>

#include "collector_process.h"
#include "hostfile.h"
#include "hang_analysis.h"
#include "run_store_reader.h"
#include "json_number.h"
#include "progress_reporter.h"
#include "run_file_claim.h"
#include "run_workspace.h"
#include "ddpscope/error.h"
#include "rpc/listen_address.h"
#include "worker_protocol.h"
#include "ddpscope/env.h"

namespace ddpscope::apps {
namespace {

namespace fs = std::filesystem;

// Signals reach the event loop through a pipe (the only async-signal-safe hand-off).
int g_signal_pipe[2] = {-1, -1};
void on_signal(int sig) {
  const char c = static_cast<char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &c, 1);
}

// A pipe whose open ends close when it goes out of scope: when the job ends, and also
// when a later step fails (a second pipe() that fails no longer leaks the first).
class Pipe {
 public:
  Pipe() { DDPSCOPE_CHECK(::pipe(fd_) == 0, "launcher: cannot create a pipe: ", std::strerror(errno)); }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fd_[0]; }
  int write_end() const { return fd_[1]; }
  void close_read() { close_end(0); }
  void close_write() { close_end(1); }

 private:
  void close_end(int i) {
    if (fd_[i] >= 0) ::close(fd_[i]);
    fd_[i] = -1;
  }
  int fd_[2] = {-1, -1};
};

// While it lives, SIGINT, SIGTERM and SIGUSR1 are written into `pipe` for the event loop;
// after, they act as by default again and nothing writes into the closed pipe.
class SignalRouting {
 public:
  explicit SignalRouting(const Pipe& pipe) {
    g_signal_pipe[0] = pipe.read_end();
    g_signal_pipe[1] = pipe.write_end();
  }
  void install() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    for (int sig : {SIGINT, SIGTERM, SIGUSR1}) sigaction(sig, &sa, nullptr);
    installed_ = true;
  }
  void restore() {
    if (installed_)
      for (int sig : {SIGINT, SIGTERM, SIGUSR1}) signal(sig, SIG_DFL);
    installed_ = false;
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }
  ~SignalRouting() { restore(); }
  SignalRouting(const SignalRouting&) = delete;
  SignalRouting& operator=(const SignalRouting&) = delete;

 private:
  bool installed_ = false;
};

std::string find_in_path(const std::string& name) {
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

// Splits complete lines off a read buffer.
struct LineReader {
  std::string buffer;
  template <typename Fn>
  void feed(const char* data, size_t n, Fn&& on_line) {
    buffer.append(data, n);
    size_t pos;
    while ((pos = buffer.find('\n')) != std::string::npos) {
      on_line(buffer.substr(0, pos));
      buffer.erase(0, pos + 1);
    }
  }
};

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

// Open MPI's own report of a fatal error in an MPI call (MPI_ERRORS_ARE_FATAL):
//   *** An error occurred in MPI_Allreduce
//   *** reported by process [579076097,0]
//   *** MPI_ERR_TRUNCATE: message truncated
// as {rank, "MPI_Allreduce failed on rank 0: MPI_ERR_TRUNCATE: message truncated ..."};
// {-1, ""} when the lines are not there.
std::pair<int, std::string> mpi_fatal_error(const std::deque<std::string>& lines) {
  static const std::regex call_re(R"(\*\*\* An error occurred in (MPI_\w+))");
  static const std::regex rank_re(R"(\*\*\* reported by process \[\d+,(\d+)\])");
  static const std::regex class_re(R"(\*\*\* (MPI_ERR_\w+: .*))");
  std::string call, error_class;
  int rank = -1;
  for (const auto& line : lines) {
    std::smatch m;
    if (call.empty() && std::regex_search(line, m, call_re)) call = m[1];
    if (rank < 0 && std::regex_search(line, m, rank_re)) rank = std::stoi(m[1]);
    if (error_class.empty() && std::regex_search(line, m, class_re)) error_class = m[1];
  }
  if (call.empty() || rank < 0) return {-1, {}};
  std::string text = detail::concat(call, " failed on rank ", rank, ": ", error_class.empty() ? "an MPI error" : error_class);
  if (error_class.rfind("MPI_ERR_TRUNCATE", 0) == 0) {
    text += "; the ranks called collectives of different sizes or in a different order. Rerun with "
            "DDPSCOPE_DEBUG=detail: each collective is then checked across ranks and a mismatch names both sides";
  }
  return {rank, text};
}

// Why a job has not started training, from what its run file holds so far: the ranks
// that never reached the collector (still starting MPI), or, when all did, the hang
// analysis, which names the rank that never entered the collective the others wait in
// (DDP's parameter broadcast, say). Empty when the file says nothing more.
std::string describe_stuck_start(const std::string& run_file, int np) {
  try {
    probes::RunStoreReader run(run_file);
    std::vector<bool> seen(static_cast<size_t>(np), false);
    for (const auto& r : run.ranks())
      if (r.rank >= 0 && r.rank < np) seen[static_cast<size_t>(r.rank)] = true;
    std::string missing;
    for (int r = 0; r < np; ++r)
      if (!seen[static_cast<size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    if (!missing.empty()) return "; ranks that never reached the run's collector: " + missing;
    const probes::HangReport report = probes::analyze_hang(run);
    std::string verdict = report.verdict;
    if (!verdict.empty() && verdict.back() == '.') verdict.pop_back();  // the caller goes on
    if (!verdict.empty()) return "; every rank reached the run's collector. " + verdict;
  } catch (const std::exception&) {
    // Nothing readable yet: the message stands without it.
  }
  return {};
}

}  // namespace

JobLauncher::JobLauncher(LaunchOptions launch) : launch_(std::move(launch)) {
  DDPSCOPE_CHECK(launch_.np >= 1, "--np must be at least 1, got ", launch_.np);
  DDPSCOPE_CHECK(launch_.backend == "mpi" || launch_.backend == "nccl",
                 "--backend: unknown backend '", launch_.backend, "'; choose mpi or nccl");
  DDPSCOPE_CHECK(launch_.hostfile.empty() || fs::exists(launch_.hostfile), "--hostfile: '",
                 launch_.hostfile, "' does not exist");
  if (!launch_.hostfile.empty()) {
    // Read here: mpirun's words for a bad hostfile are ORTE internals, after the run file
    // was made. Slots bound the world size as cores do on one machine.
    const int slots = read_hostfile(launch_.hostfile).total_slots();
    DDPSCOPE_CHECK(slots < 0 || launch_.np <= slots || (launch_.oversubscribe && launch_.np <= kMaxRanksPerCore * slots),
                   "--np ", launch_.np, " ranks is more than the ", slots, " slots of --hostfile '", launch_.hostfile,
                   "'", launch_.oversubscribe ? detail::concat(" allow even with --oversubscribe (", kMaxRanksPerCore,
                                                               " per slot, ", kMaxRanksPerCore * slots, ")")
                                              : std::string(""),
                   "; use fewer ranks, add hosts or slots", launch_.oversubscribe ? "" : ", or add --oversubscribe");
  }
  // On one machine, mpirun starts whatever it is asked for: 100,000 ranks load it for
  // minutes before anything fails. A few ranks per core are fine (tests run 4 on 2).
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  DDPSCOPE_CHECK(!launch_.hostfile.empty() || launch_.oversubscribe ||
                     launch_.np <= kMaxRanksPerCore * cores,
                 "--np ", launch_.np, " ranks on this machine's ", cores,
                 cores == 1 ? " core" : " cores", " is more than ", kMaxRanksPerCore,
                 " per core (", kMaxRanksPerCore * cores,
                 "); use fewer ranks, spread them with --hostfile, or add --oversubscribe");
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  worker_path_ = (self.parent_path() / "ddpscope-worker").string();
  DDPSCOPE_CHECK(!ec && fs::exists(worker_path_),
                 "the rank program ddpscope-worker was not found next to ", self.string(),
                 "; build the whole project (cmake --build build)");
  mpirun_path_ = find_in_path("mpirun");
  DDPSCOPE_CHECK(!mpirun_path_.empty(),
                 "mpirun was not found on PATH; install openmpi-bin "
                 "(bash packaging/install-deps.sh)");
}

std::vector<std::string> JobLauncher::command(const TrainOptions& train) const {
  return command_with(train_arguments(train, launch_));
}

std::vector<std::string> JobLauncher::command_with(const std::vector<std::string>& worker_args) const {
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
  for (const char* var :
       {"OPENBLAS_CORETYPE", "DDPSCOPE_BLAS_CORE_CHOSEN", "DDPSCOPE_PG_TIMEOUT_MS",
        "DDPSCOPE_DEBUG", "DDPSCOPE_FAULT", "DDPSCOPE_DATA_DIR", "DDPSCOPE_MPI_RING"}) {
    if (std::getenv(var)) cmd.insert(cmd.end(), {"-x", var});
  }
  for (const char* const* var = CollectorProcess::environment_names(); *var; ++var) {
    if (std::getenv(*var)) cmd.insert(cmd.end(), {"-x", *var});
  }
  cmd.push_back(worker_path_);
  for (auto& a : worker_args)
    cmd.push_back(a);
  return cmd;
}

int JobLauncher::run(const TrainOptions& train, ProgressStyle style) {
  return run_command(command(train), options_json(train, launch_).dump(), train.model, train.iters,
                     style, true);
}

int JobLauncher::run_mode(const std::vector<std::string>& worker_args, const nlohmann::json& config,
                          const std::string& model) {
  return run_command(command_with(worker_args), config.dump(), model, 0, ProgressStyle::Lines, false);
}

int JobLauncher::run_command(const std::vector<std::string>& cmd, const std::string& config_json,
                             const std::string& model, int64_t iters, ProgressStyle style,
                             bool training) {
  // The watchdogs' limits, read (and a malformed one refused) before anything starts.
  const auto end_grace = std::chrono::milliseconds(env_int("DDPSCOPE_MPIRUN_END_GRACE_MS", 15000));
  const auto start_timeout = std::chrono::milliseconds(env_int("DDPSCOPE_START_TIMEOUT_MS", 180000, 1));
  const auto end_timeout = std::chrono::milliseconds(env_int("DDPSCOPE_END_TIMEOUT_MS", 60000, 1));
  std::unique_ptr<probes::RunFileClaim> claim;  // held until the job has ended
  std::unique_ptr<CollectorProcess> collector;
  if (launch_.probes) {
    claim = probes::claim_run_file(launch_.out, launch_.force);
    const std::string& run_file = claim->path();
    probes::RunDescription run{config_json, launch_.np, launch_.backend, model};
    // Ranks on other hosts reach the collector through the network, not loopback: on the
    // address given, else on the one this host's route to the job's hosts leaves from.
    // Never on every interface: the collector accepts no one but the job's ranks.
    const char* env_address = std::getenv("DDPSCOPE_COLLECTOR_ADDRESS");
    std::string address = !launch_.collector_address.empty() ? launch_.collector_address
                          : env_address && *env_address       ? std::string(env_address)
                          : launch_.hostfile.empty()          ? std::string("127.0.0.1")
                                                              : address_towards_hosts(read_hostfile(launch_.hostfile));
    DDPSCOPE_CHECK(!address.empty(), "cannot tell which address of this host the hosts of --hostfile '",
                   launch_.hostfile, "' reach it on (a host name does not resolve?); pass --collector-address");
    collector = std::make_unique<CollectorProcess>(run_file, run, address);
    std::printf("run file: %s\n", run_file.c_str());
    std::fflush(stdout);
  }
  Pipe out_pipe, err_pipe, signal_pipe;
  SignalRouting signals(signal_pipe);
  const pid_t launcher_pid = getpid();
  const pid_t child = fork();
  DDPSCOPE_CHECK(child >= 0, "launcher: fork failed: ", std::strerror(errno));
  if (child == 0) {
    // Own process group: a terminal's Ctrl-C reaches mpirun only through us, once.
    setpgid(0, 0);
    // If the launcher dies (killed, crashed), mpirun is told to end the ranks: they must
    // not run on as orphans. The parent may already be gone: then end at once.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != launcher_pid) _exit(1);
    dup2(out_pipe.write_end(), STDOUT_FILENO);
    dup2(err_pipe.write_end(), STDERR_FILENO);
    for (int fd : {out_pipe.read_end(), out_pipe.write_end(), err_pipe.read_end(), err_pipe.write_end(),
                   signal_pipe.read_end(), signal_pipe.write_end()})
      close(fd);
    std::vector<char*> argv;
    for (const auto& a : cmd)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "launcher: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child);
  out_pipe.close_write();
  err_pipe.close_write();
  signals.install();  // SIGUSR1: record the next iteration's autograd graph

  ProgressReporter progress(iters, style, launch_.log_every);
  LineReader out_lines, err_lines;
  std::deque<std::string> err_tail;  // mpirun's own words about a dead rank
  int failed_rank = -1;
  std::string failure;
  bool interrupted = false;
  double seconds = 0;
  std::chrono::steady_clock::time_point kill_at{};
  // After a rank reports its failure, MPI_Abort ends the job within a second or two, unless
  // mpirun cannot reach the daemon of some host (its link is down): then it waits for it
  // forever. Past this grace the launcher ends mpirun itself.
  std::chrono::steady_clock::time_point failed_at{};
  bool giving_up = false;

  // A rank stuck before training (stopped or hung in MPI initialisation, which has no
  // timeout of its own) would hold the job forever: past this, the launcher ends it.
  const auto launched_at = std::chrono::steady_clock::now();
  bool started = !training;  // jobs other than training report no start
  bool start_timed_out = false;
  // Likewise at the end: MPI_Finalize waits for every rank without a timeout, so a rank
  // stopped (or stuck) after the last collective would hold the others there forever.
  // The clock starts when training is done and the first rank reports its end.
  bool training_done = false;
  std::optional<std::chrono::steady_clock::time_point> ending_since;
  std::vector<bool> rank_ended(static_cast<size_t>(launch_.np), false);
  bool end_timed_out = false;
  auto handle_out = [&](const std::string& line) {
    auto ev = parse_worker_event(line);
    if (!ev) {
      std::printf("%s\n", line.c_str());
      return;
    }
    const std::string kind = ev->value("event", "");
    if (kind == "start") started = true;
    if (kind == "start" && style == ProgressStyle::Json) {
      emit_worker_event(stdout, *ev);
    } else if (kind == "start") {
      std::printf("training %s on %d ranks (%s backend) for %lld iterations\n",
                  ev->value("describe", "").c_str(), ev->value("world_size", 0),
                  ev->value("backend", "").c_str(), static_cast<long long>(iters));
    } else if (kind == "progress") {
      progress.update(ev->value("iter", int64_t{0}), probes::json_field(*ev, "loss"),
                      probes::json_field(*ev, "samples_per_s"));
    } else if (kind == "done") {
      seconds = ev->value("seconds", 0.0);
      training_done = true;
    }
    std::fflush(stdout);
  };
  std::vector<std::pair<int, uint64_t>> dropped_by_rank;
  auto handle_err = [&](const std::string& line) {
    if (auto ev = parse_worker_event(line)) {
      if (ev->value("event", "") == "probes") {
        const int rank = ev->value("rank", -1);
        dropped_by_rank.emplace_back(rank, ev->value("dropped", uint64_t{0}));
        if (rank >= 0 && rank < launch_.np) rank_ended[static_cast<size_t>(rank)] = true;
        if (training_done && !ending_since) ending_since = std::chrono::steady_clock::now();
        return;
      }
      if (ev->value("event", "") == "error" && failed_rank < 0) {
        failed_rank = ev->value("rank", -1);
        failure = ev->value("message", "");
        failed_at = std::chrono::steady_clock::now();
      }
      return;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
    err_tail.push_back(line);
    if (err_tail.size() > 64) err_tail.pop_front();
  };

  bool out_open = true, err_open = true;
  int status = 0;
  bool exited = false;
  while (!exited) {
    pollfd fds[3] = {{out_open ? out_pipe.read_end() : -1, POLLIN, 0},
                     {err_open ? err_pipe.read_end() : -1, POLLIN, 0},
                     {signal_pipe.read_end(), POLLIN, 0}};
    poll(fds, 3, 200);
    char buf[8192];
    if (fds[0].revents) {
      const ssize_t n = read(out_pipe.read_end(), buf, sizeof(buf));
      if (n > 0)
        out_lines.feed(buf, static_cast<size_t>(n), handle_out);
      else
        out_open = false;
    }
    if (fds[1].revents) {
      const ssize_t n = read(err_pipe.read_end(), buf, sizeof(buf));
      if (n > 0)
        err_lines.feed(buf, static_cast<size_t>(n), handle_err);
      else
        err_open = false;
    }
    if (fds[2].revents) {
      char sig = 0;
      if (read(signal_pipe.read_end(), &sig, 1) != 1) {
        // nothing to read after all
      } else if (sig == SIGUSR1) {
        if (collector) {
          collector->request_graph();
          std::fprintf(stderr, "asked every rank for the autograd graph of its next iteration\n");
        }
      } else {
        if (!interrupted) {
          interrupted = true;
          std::fprintf(stderr, "\nstopping the job (signal %d): forwarding SIGTERM to every rank\n",
                       sig);
          kill(child, SIGTERM);  // mpirun forwards it to the ranks
          kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        } else {
          kill_at = std::chrono::steady_clock::now();  // a second signal: stop now
        }
      }
    }
    if (failed_rank >= 0 && !giving_up && !interrupted && std::chrono::steady_clock::now() - failed_at >= end_grace) {
      giving_up = true;
      std::fprintf(stderr,
                   "[ddpscope] mpirun has not ended %.0f s after rank %d reported its failure: it cannot reach the "
                   "ranks of some host (a host cut off from the network?). Ending mpirun; processes on an "
                   "unreachable host end when it can be reached again\n",
                   std::chrono::duration<double>(end_grace).count(), failed_rank);
      kill(child, SIGTERM);
      kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    }
    if (!started && !start_timed_out && !interrupted && failed_rank < 0 &&
        std::chrono::steady_clock::now() - launched_at >= start_timeout) {
      start_timed_out = giving_up = true;
      failure = detail::concat("the job had not started training ", static_cast<long long>(start_timeout.count() / 1000),
                               " s after launch: a rank is stuck before training (stopped, or hung in MPI "
                               "initialisation or the model's set-up); DDPSCOPE_START_TIMEOUT_MS sets this limit");
      // Looked at now, before ending the job: mpirun continues stopped ranks as it ends them.
      if (collector) failure += describe_stuck_start(collector->run_file(), launch_.np);
      std::fprintf(stderr, "[ddpscope] %s. Ending it\n", failure.c_str());
      kill(child, SIGTERM);
      kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    }
    if (ending_since && !giving_up && !interrupted && failed_rank < 0 &&
        std::chrono::steady_clock::now() - *ending_since >= end_timeout) {
      end_timed_out = giving_up = true;
      std::string stuck;
      for (int r = 0; r < launch_.np; ++r)
        if (!rank_ended[static_cast<size_t>(r)]) stuck += (stuck.empty() ? "" : ", ") + std::to_string(r);
      failure = detail::concat(
          "training finished, but the job had not exited ", static_cast<long long>(end_timeout.count() / 1000),
          " s after the first rank ended: MPI_Finalize waits for every rank, and ",
          stuck.empty() ? std::string("every rank reported its end, so one is stuck in MPI's shutdown")
                        : "rank(s) " + stuck + " never reported their end (stopped, or stuck after training)",
          "; every event before that is in the run file; DDPSCOPE_END_TIMEOUT_MS sets this limit");
      std::fprintf(stderr, "[ddpscope] %s. Ending it\n", failure.c_str());
      kill(child, SIGTERM);
      kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    }
    if ((interrupted || giving_up) && std::chrono::steady_clock::now() >= kill_at) {
      kill(-child, SIGKILL);  // mpirun and the ranks it started share its process group
    }
    if (!out_open && !err_open) {
      waitpid(child, &status, 0);
      exited = true;
    } else if (waitpid(child, &status, WNOHANG) == child) {
      // Drain what is left, then stop. Only what is there now: a process mpirun started on
      // a host it lost may hold the pipes open for as long as that host is cut off.
      const auto drain = [&](int fd, LineReader& lines, auto& handle) {
        pollfd p{fd, POLLIN, 0};
        ssize_t n;
        while (poll(&p, 1, 100) > 0 && (n = read(fd, buf, sizeof(buf))) > 0)
          lines.feed(buf, static_cast<size_t>(n), handle);
      };
      drain(out_pipe.read_end(), out_lines, handle_out);
      drain(err_pipe.read_end(), err_lines, handle_err);
      exited = true;
    }
  }
  // Ranks may outlive mpirun only if it was killed; make sure none is left behind.
  kill(-child, SIGKILL);
  signals.restore();  // from here a signal acts as by default again
  out_pipe.close_read();
  err_pipe.close_read();

  // mpirun ended by the launcher dies by its signal: that is no crash of the job's.
  const int code = giving_up ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto close_run = [&](const std::string& run_status, const std::string& message) {
    if (!collector) return;
    collector->finish(run_status, message, failed_rank, dropped_by_rank);
    std::printf("run file: %s (summary: ddpscope-cli stats %s)\n", collector->run_file().c_str(),
                collector->run_file().c_str());
    std::fflush(stdout);
  };
  if (code == 0 && !interrupted) {
    if (training) progress.finish(seconds);
    close_run("finished", "");
    return 0;
  }
  if (failed_rank < 0 && !start_timed_out && !end_timed_out) std::tie(failed_rank, failure) = mpi_fatal_error(err_tail);
  // A rank killed by a signal: mpirun names it ("process rank 0 ... exited on signal 9").
  // Not after the launcher ended a job stuck starting or ending: those are its own signals.
  static const std::regex dead_re("process rank ([0-9]+)");
  for (const auto& line : start_timed_out || end_timed_out ? std::deque<std::string>{} : err_tail) {
    std::smatch m;
    if (!std::regex_search(line, m, dead_re)) continue;
    if (failed_rank < 0) {  // no report from a rank: a crash or a kill
      failed_rank = std::stoi(m[1]);
      failure = line;
    } else if (std::stoi(m[1]) != failed_rank) {
      // Another rank reported what the death did to it (a broken connection, a timeout);
      // the message keeps mpirun's words, so the diagnosis names the rank that died.
      failure += " (mpirun: " + line + ")";
    }
    break;
  }
  if (interrupted) {
    close_run("stopped", "stopped by a signal");
    std::fprintf(stderr, "error: the job was stopped by a signal\n");
    return 130;
  }
  // The rank that reports a timeout is rarely the culprit: the run file knows which rank
  // never entered the collective (the hang analysis, as `ddpscope-cli hang` prints it).
  const auto print_diagnosis = [&] {
    if (!collector) return;
    try {
      probes::RunStoreReader run(collector->run_file());
      const probes::HangReport report = probes::analyze_hang(run);
      if (!report.verdict.empty()) std::fprintf(stderr, "diagnosis: %s\n", report.verdict.c_str());
    } catch (const std::exception&) {
      // A run file too damaged to read: the error above is all there is.
    }
  };
  if (start_timed_out || end_timed_out) {
    close_run("failed", failure);
    if (style == ProgressStyle::Json)
      emit_worker_event(stdout, {{"event", "failed"}, {"rank", -1}, {"message", failure}, {"exit_code", code}});
    std::fprintf(stderr, "error: %s\n", failure.c_str());
    return code;
  }
  close_run("failed", failed_rank >= 0 ? failure
                                       : detail::concat("mpirun exited with code ", code,
                                                        " and no rank reported an error"));
  if (style == ProgressStyle::Json) {
    emit_worker_event(stdout,
                      {{"event", "failed"},
                       {"rank", failed_rank},
                       {"message", failed_rank >= 0 ? failure : "no rank reported an error"},
                       {"exit_code", code}});
  }
  if (failed_rank >= 0) {
    std::fprintf(stderr, "error: the job failed: rank %d: %s\n", failed_rank, failure.c_str());
  } else {
    std::fprintf(
        stderr, "error: the job failed: mpirun exited with code %d and no rank reported an error\n",
        code);
  }
  print_diagnosis();
  return code == 0 ? 1 : code;
}

}  // namespace ddpscope::apps
