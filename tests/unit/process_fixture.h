// For the process tests: this process's open descriptors, whether a pid still runs, and
// commands to supervise.
#pragma once

#include <QtTest/QtTest>

#include <signal.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
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
