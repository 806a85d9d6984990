#include "process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace ddpscope::apps {
namespace {

struct Stat {
  pid_t ppid = 0;
  uint64_t start_ticks = 0;
};

// /proc/PID/stat: "pid (comm) state ppid ... starttime" (starttime is field 22). The
// command name may hold spaces and parentheses: fields are counted from its last ')'.
bool read_stat(pid_t pid, Stat& out) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  if (!close) return false;
  // After ") ": field 3 (state), then 4 (ppid) ... 22 (starttime).
  const char* p = close + 2;
  int field = 3;
  while (*p && field < 22) {
    if (field == 4) out.ppid = static_cast<pid_t>(std::strtol(p, nullptr, 10));
    p = std::strchr(p, ' ');
    if (!p) return false;
    ++p;
    ++field;
  }
  out.start_ticks = std::strtoull(p, nullptr, 10);
  return field == 22;
}

// The pids in /proc now.
std::vector<pid_t> live_pids() {
  std::vector<pid_t> pids;
  if (DIR* d = opendir("/proc")) {
    while (const dirent* e = readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (end && *end == '\0' && pid > 0) pids.push_back(static_cast<pid_t>(pid));
    }
    closedir(d);
  }
  return pids;
}

}  // namespace

std::vector<ProcessId> DescendantSurvey::look() {
  const auto now = std::chrono::steady_clock::now();
  const bool refresh = !refreshed_ || now - refreshed_at_ >= refresh_every_;
  if (refresh) {
    refreshed_ = true;
    refreshed_at_ = now;
  }
  std::unordered_map<pid_t, Seen> alive;
  for (const pid_t pid : live_pids()) {
    const auto known = seen_.find(pid);
    if (!refresh && known != seen_.end()) {
      alive.emplace(pid, known->second);
      continue;
    }
    Stat s;
    ++stats_read_;
    if (read_stat(pid, s)) alive.emplace(pid, Seen{s.ppid, s.start_ticks});
  }
  seen_ = std::move(alive);
  std::multimap<pid_t, ProcessId> children;  // parent -> child
  for (const auto& [pid, s] : seen_)
    children.insert({s.ppid, {pid, s.start_ticks}});
  std::vector<ProcessId> out;
  std::vector<pid_t> todo = {root_};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    auto [lo, hi] = children.equal_range(parent);
    for (auto it = lo; it != hi; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second.pid);
    }
  }
  return out;
}

int kill_if_same(const std::vector<ProcessId>& processes) {
  int sent = 0;
  for (const ProcessId& p : processes) {
    Stat s;
    if (read_stat(p.pid, s) && s.start_ticks == p.start_ticks && ::kill(p.pid, SIGKILL) == 0) ++sent;
  }
  return sent;
}

}  // namespace ddpscope::apps
