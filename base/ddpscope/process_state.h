// A process's state on this host, from /proc/PID/stat: what a launcher, a collector or a
// live view can say about a rank that does not answer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace ddpscope {

// 'R' running, 'S' sleeping, 'D' waiting in the kernel, 'T' stopped by a signal (SIGSTOP,
// SIGTSTP), 't' stopped by a debugger, 'Z' exited and not yet reaped; 0 when there is no
// such process (it exited and was reaped, or it is on another host).
inline char process_state(int64_t pid) {
  if (pid <= 0) return 0;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%lld/stat", static_cast<long long>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // "PID (comm) S ...": the state follows the last ')' (comm may hold spaces or parens).
  const char* close = std::strrchr(buf, ')');
  return close && close[1] == ' ' && close[2] ? close[2] : 0;
}

inline bool is_stopped_state(char state) { return state == 'T' || state == 't'; }

}  // namespace ddpscope
