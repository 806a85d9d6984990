// StallWatcher: a thread of a rank that notices when the rank stops making progress (no
// probe event for the stall time: DDPSCOPE_STACKS_AFTER_S, 3 s by default, or 10 of its
// recent iterations if longer) and then acts once per stall: our engine's ranks take every
// thread's native stack (native_stacks.h), as the PyTorch ranks' Python watcher does
// (probes/python/ddpscope/_stacks.py, which reads the same variable).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ddpscope::probes {

// DDPSCOPE_STACKS_AFTER_S: seconds without progress before the stacks are taken (0: never);
// a value that is not a number is said on stderr and the default used.
double stacks_after_seconds();

// Queues one "stacks" record (docs/run-files.md) of every thread's native stack, the
// caller's included (a helper thread takes them), but those of `skip` (a watcher's own).
void record_native_stacks(const std::string& reason, int64_t stalled_ns, const std::vector<int64_t>& skip = {});

// Asks this process's watcher for every thread's stack now (the collector passes the user's
// ask on); take_stacks_request() consumes the ask.
void request_stacks() noexcept;
bool take_stacks_request() noexcept;

class StallWatcher {
 public:
  struct Hooks {
    std::function<uint64_t()> progress;            // changes whenever the rank makes progress
    std::function<int64_t()> median_iteration_ns;  // 0 before the first iterations
    // Once per stall, and at each ask (`asked`: the user's, not a stall's).
    std::function<void(int64_t stalled_ns, int64_t watcher_tid, bool asked)> on_stall;
  };
  // after_s <= 0: no stall captures (the thread still answers asks).
  StallWatcher(double after_s, Hooks hooks);
  ~StallWatcher();
  // Waits (up to `limit`) for a capture under way to end: a rank that fails the job at its
  // collective's timeout calls this before it ships its last events and aborts, or the stack
  // its stall started (seconds earlier, on a busy machine) is lost with the process.
  void wait_for_capture(std::chrono::milliseconds limit);
  StallWatcher(const StallWatcher&) = delete;
  StallWatcher& operator=(const StallWatcher&) = delete;

 private:
  void watch();

  const double after_s_;
  Hooks hooks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool acting_ = false;  // on_stall is running
  std::condition_variable acted_;
  std::thread thread_;
};

}  // namespace ddpscope::probes
