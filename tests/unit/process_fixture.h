// For the process tests: this process's open descriptors, whether a pid still runs, and
// commands to supervise.
#pragma once

#include <QtTest/QtTest>

#include <signal.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "ddpscope/error.h"
#include "job_watchdogs.h"
#include "mpirun_messages.h"
#include "process_supervisor.h"

namespace ddpscope::testing::process_fixture {

using namespace ddpscope::apps;
using namespace std::chrono_literals;

inline int open_descriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

// Running, or stopped: anything but gone or a zombie (which a container's init may never reap).
inline bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// The process's stat line, "" when it is gone: for messages, and for start_ticks.
inline std::string stat_line(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  return line;
}

// When the process started (stat's 22nd field, in clock ticks since boot); 0 when it is gone.
// A pid and this name one process: the suite starts enough processes and threads on a
// machine whose pid_max is 32768 that a pid may be given again within seconds.
inline uint64_t start_ticks(pid_t pid) {
  const std::string line = stat_line(pid);
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(line.substr(paren + 2));  // from the 3rd field, the state
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::stoull(field);
  return 0;
}

// The process that had `pid` when `ticks` was read still runs (a later one with its pid does not count).
inline bool same_process_alive(pid_t pid, uint64_t ticks) {
  return ticks != 0 && start_ticks(pid) == ticks && process_alive(pid);
}

inline ProcessSupervisor sh(const std::string& script) { return ProcessSupervisor({"/bin/sh", "-c", script}); }

struct Collected {
  QStringList out, err;
  QList<int> received;
  int ticks = 0;
  ProcessSupervisor::Events events() {
    return {[this](const std::string& l) { out << QString::fromStdString(l); },
            [this](const std::string& l) { err << QString::fromStdString(l); }, [this](int s) { received << s; },
            [this](auto) { ++ticks; }};
  }
};

// What the tests of this fixture share.
class ProcessTest : public QObject {
 protected:
};

}  // namespace ddpscope::testing::process_fixture
