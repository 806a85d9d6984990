#include "collector_process.h"
#include "ddpscope/log.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "collector_protocol.h"
#include "flight_records.h"
#include "launcher_outcome.h"
#include "probe.h"
#include "ddpscope/error.h"
#include "ddpscope/random_token.h"
#include "worker_protocol.h"

namespace ddpscope::apps {
namespace {

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return detail::concat("killed by signal ", WTERMSIG(status));
  return detail::concat("exited with code ", WEXITSTATUS(status));
}

}  // namespace

const char* const* CollectorProcess::environment_names() {
  static const char* const names[] = {probes::kCollectorEnv, probes::kCollectorClockEnv, probes::kRunTokenEnv,
                                      probes::kClockSkewEnv, probes::kFlightDumpEnv,     nullptr};
  return names;
}

CollectorProcess::CollectorProcess(const std::string& run_file, const probes::RunDescription& run,
                                   const std::string& bind_host)
    : run_file_(run_file) {
  // Dumps of an earlier run of this name are not this run's.
  for (const std::string& stale : probes::flight_dumps_beside(run_file))
    std::remove(stale.c_str());
  setenv(probes::kFlightDumpEnv, (run_file + ".fr_rank_").c_str(), 1);
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string exe = (self.parent_path() / "ddpscope-collector").string();
  DDPSCOPE_CHECK(!ec && access(exe.c_str(), X_OK) == 0, "ddpscope-collector was not found next to ", self.string(),
                 "; build the whole project (cmake --build build), or pass --no-probes");
  const std::string token = random_token();
  setenv(probes::kRunTokenEnv, token.c_str(), 1);
  int in_pipe[2], out_pipe[2];
  DDPSCOPE_CHECK(pipe(in_pipe) == 0 && pipe(out_pipe) == 0, "cannot create pipes: ", std::strerror(errno));
  const std::vector<std::string> args = {
      exe,         "--out",     run_file,  "--bind",  bind_host,  "--world-size", std::to_string(run.world_size),
      "--backend", run.backend, "--model", run.model, "--config", run.config_json};
  pid_ = fork();
  DDPSCOPE_CHECK(pid_ >= 0, "fork failed: ", std::strerror(errno));
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]})
      close(fd);
    std::vector<char*> argv;
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    // Not the logger: between fork() and exec() only the plainest calls are safe.
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  stdin_fd_ = in_pipe[1];
  fcntl(stdin_fd_, F_SETFD, FD_CLOEXEC);  // mpirun and the ranks must not hold it open
  // The first line names the endpoints.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out_pipe[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[1024];
    const ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  const auto event = job_events::parse_line(line.substr(0, line.find('\n')));
  const auto* listening = event ? std::get_if<job_events::Collector>(&*event) : nullptr;
  if (!listening) {
    int status = 0;
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    exited_ = true;
    throw DDPSCOPE_ERROR("the collector did not start (", describe_exit(status),
                         "); its error is above. Pass --no-probes to train without recording");
  }
  setenv(probes::kCollectorEnv, listening->batch.c_str(), 1);
  setenv(probes::kCollectorClockEnv, listening->clock.c_str(), 1);
}

CollectorProcess::~CollectorProcess() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (!exited_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool CollectorProcess::alive() {
  if (exited_) return false;
  if (waitpid(pid_, &exit_status_, WNOHANG) == pid_) exited_ = true;
  return !exited_;
}

void CollectorProcess::request_graph() { send_request("{\"request\":\"graph\"}\n"); }
void CollectorProcess::request_stacks() { send_request("{\"request\":\"stacks\"}\n"); }

void CollectorProcess::send_request(const std::string& line) {
  if (stdin_fd_ < 0 || !alive()) return;
  signal(SIGPIPE, SIG_IGN);
  [[maybe_unused]] ssize_t n = write(stdin_fd_, line.data(), line.size());
}

void CollectorProcess::finish(const probes::RunEnd& end, const std::vector<std::pair<int, uint64_t>>& dropped_by_rank) {
  finish_run(end, dropped_by_rank);
  merge_flight_dumps();
}

// The dumps ranks wrote when a collective timed out or a signal ended them: into the run
// file now that the collector (its only other writer) is gone, then removed. A dump cut
// short (its rank killed while writing) stays beside the file, named in a warning.
void CollectorProcess::merge_flight_dumps() {
  const std::vector<std::string> dumps = probes::flight_dumps_beside(run_file_);
  if (dumps.empty()) return;
  try {
    probes::RunStoreWriter writer(run_file_);
    for (const std::string& file : dumps) {
      try {
        writer.store_flight_dump(probes::read_flight_dump(file), "dump");
        std::remove(file.c_str());
      } catch (const probes::RunStoreError& e) {
        log::warn("flight recorder: {}; left beside the run file", e.message());
      }
    }
  } catch (const std::exception& e) {
    log::warn("flight recorder: could not merge the ranks' dumps into {}: {}; they stay beside it", run_file_,
              e.what());
  }
}

void CollectorProcess::finish_run(const probes::RunEnd& end,
                                  const std::vector<std::pair<int, uint64_t>>& dropped_by_rank) {
  if (alive()) {
    const std::string line = probes::outcome_line({end, rank_end_states_});
    signal(SIGPIPE, SIG_IGN);
    [[maybe_unused]] ssize_t n = write(stdin_fd_, line.data(), line.size());
    close(stdin_fd_);
    stdin_fd_ = -1;
    // It stores what is still in flight, then exits; give it a generous while.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (alive() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    bool clean = true;
    if (!exited_) {
      log::warn("the collector did not finish in 30 s; stopping it");
      kill(pid_, SIGKILL);
      waitpid(pid_, &exit_status_, 0);
      exited_ = true;
      clean = false;
    } else if (!(WIFEXITED(exit_status_) && WEXITSTATUS(exit_status_) == 0)) {
      clean = false;
    }
    if (clean) return;
    // It died while finishing (killed, crashed): it never wrote the outcome. Below.
  }
  // The collector died during the job: the file is still sound (WAL), mark it here.
  const std::string why =
      "the collector " + describe_exit(exit_status_) + " during the job; events after that were dropped";
  log::warn("{}", why);
  // The room it kept for the end record (probes/collector/disk_reserve.h) is not needed now.
  std::remove((run_file_ + "-reserve").c_str());
  try {
    probes::RunStoreWriter writer(run_file_);
    for (const auto& [rank, dropped] : dropped_by_rank)
      writer.add_dropped(rank, dropped);
    probes::RunEnd marked = end;
    if (marked.status == "finished") marked.status = "incomplete";
    marked.message = end.message.empty() ? why : end.message + "; " + why;
    writer.end_run(marked);
    writer.set_ended_ns(probes::now_ns());  // the collector ran on this host: the run's clock
  } catch (const std::exception& e) {
    log::warn("could not mark the run file: {}", e.what());
  }
}

}  // namespace ddpscope::apps
