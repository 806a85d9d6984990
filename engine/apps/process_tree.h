// The processes below one: what a launcher must end when it ends a job. mpirun puts each
// rank in a process group of its own, so killing mpirun's group missed them: two Ctrl-C's
// left both ranks of a torch job training with PPID 1. Read from /proc.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <unordered_map>
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

// The processes below `root` (not `root` itself), looked for again and again: a launcher
// looks every 20 ms while a job starts, when ranks may be orphaned at once. Reading every
// process's /proc/PID/stat at each look (then at each of the loop's wakes) took a quarter of
// a core for the first 3 s of each job (perf of `train --np 2`: 95 % of the launcher's CPU,
// on a machine of 70 processes).
// So a look reads the stat of pids it has not seen, and re-reads all of them only when
// `refresh_every` has passed since it last did: a pid cannot be reused sooner than that
// (pid_max was 32,768 here). Parents are as last read.
class DescendantSurvey {
 public:
  explicit DescendantSurvey(pid_t root, std::chrono::milliseconds refresh_every = std::chrono::milliseconds(500))
      : root_(root), refresh_every_(refresh_every) {}

  // Every process alive now whose parent chain reaches the root.
  std::vector<ProcessId> look();

  // The stat files read so far (a test's measure of the work done).
  uint64_t stats_read() const { return stats_read_; }

 private:
  struct Seen {
    pid_t ppid = 0;
    uint64_t start_ticks = 0;
  };
  pid_t root_;
  std::chrono::milliseconds refresh_every_;
  std::chrono::steady_clock::time_point refreshed_at_{};
  bool refreshed_ = false;
  std::unordered_map<pid_t, Seen> seen_;
  uint64_t stats_read_ = 0;
};

// SIGKILL to each that is still the process it was (same pid, same start); returns how
// many were sent one.
int kill_if_same(const std::vector<ProcessId>& processes);

}  // namespace ddpscope::apps
