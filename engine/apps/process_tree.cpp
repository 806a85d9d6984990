#include "process_tree.h"

#include <dirent.h>
#include <signal.h>

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
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
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

}  // namespace

std::vector<ProcessId> descendants_of(pid_t root) {
  std::multimap<pid_t, ProcessId> children;  // parent -> child
  if (DIR* d = opendir("/proc")) {
    while (const dirent* e = readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (!end || *end != '\0' || pid <= 0) continue;
      Stat s;
      if (read_stat(static_cast<pid_t>(pid), s)) children.insert({s.ppid, {static_cast<pid_t>(pid), s.start_ticks}});
    }
    closedir(d);
  }
  std::vector<ProcessId> out;
  std::vector<pid_t> todo = {root};
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
