// ProcessSupervisor: runs one command (the job's mpirun) in a process group of its own
// and reports what happens as events: each line it prints on stdout and on stderr, each
// signal the launcher is sent (SIGINT, SIGTERM, SIGUSR1), and a regular tick for the
// watchdogs. It owns every descriptor it opens; when it goes, no process it started is
// left behind (its group, and every process seen below it: process_tree.h) and the
// signals act as by default again.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "process_tree.h"

namespace ddpscope::apps {

class ProcessSupervisor {
 public:
  using Clock = std::chrono::steady_clock;
  struct Events {
    std::function<void(const std::string& line)> stdout_line;
    std::function<void(const std::string& line)> stderr_line;
    std::function<void(int signal)> signal;  // SIGINT, SIGTERM or SIGUSR1 sent to us
    std::function<void(Clock::time_point now)> tick;
  };

  // argv[0] is the program's path (not searched on PATH).
  explicit ProcessSupervisor(std::vector<std::string> argv);
  ~ProcessSupervisor();
  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  // Starts the command and routes our SIGINT, SIGTERM and SIGUSR1 to events. Only one
  // supervisor may route signals at a time. A program that cannot be executed exits 127
  // after saying why on its stderr.
  void start();
  // Delivers events until the command has exited and its output has been read; returns
  // its wait status. A process the command left holding the pipes (on a host it lost) does
  // not keep this waiting: what is there when the command exits is read, no more.
  int run(const Events& events, std::chrono::milliseconds tick_every = std::chrono::milliseconds(200));
  // Asks the command to end (SIGTERM) and kills its whole process group once `grace` has
  // passed. Asked again, the earlier of the two deadlines holds.
  void stop(std::chrono::milliseconds grace);
  bool stopping() const { return stopping_; }
  pid_t pid() const { return child_; }

  // A wait status as a shell's exit code (128 + signal for a process killed by one).
  static int exit_code(int status);

 private:
  class Pipes;
  std::vector<std::string> argv_;
  std::unique_ptr<Pipes> pipes_;
  pid_t child_ = -1;
  bool stopping_ = false;
  bool reaped_ = false;  // waited for: its pid may be another process's now
  bool ended_ = false;   // its group killed, its descriptors closed
  Clock::time_point kill_at_{};
  // Every process seen below the command (mpirun's ranks sit in process groups of their
  // own, and outlive it when it is killed): surveyed as the job runs, killed with it.
  std::set<ProcessId> tree_;
  std::optional<DescendantSurvey> survey_;
  Clock::time_point next_survey_{};
  Clock::time_point started_at_{};  // the first seconds are surveyed at every tick
  void survey();
  void kill_tree();
  void read_ready(int fd, std::string& buffer, const std::function<void(const std::string&)>& on_line, bool& open);
  void drain(int fd, std::string& buffer, const std::function<void(const std::string&)>& on_line);
  void end_group();
};

}  // namespace ddpscope::apps
