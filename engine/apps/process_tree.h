// The processes below one: what a launcher must end when it ends a job. mpirun puts each
// rank in a process group of its own, so killing mpirun's group missed them: two Ctrl-C's
// left both ranks of a torch job training with PPID 1. Read from /proc.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace ddpscope::apps {

// A process as found, with its start time (clock ticks since boot), so that a pid reused
// by another process later is not mistaken for it.
struct ProcessId {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  bool operator<(const ProcessId& o) const { return pid != o.pid ? pid < o.pid : start_ticks < o.start_ticks; }
  bool operator==(const ProcessId& o) const = default;
};

// Every process whose parent chain reaches `root` (not `root` itself).
std::vector<ProcessId> descendants_of(pid_t root);

// SIGKILL to each that is still the process it was (same pid, same start); returns how
// many were sent one.
int kill_if_same(const std::vector<ProcessId>& processes);

}  // namespace ddpscope::apps
