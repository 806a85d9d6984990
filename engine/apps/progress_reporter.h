// Shows training progress: a redrawn bar on a terminal, plain lines otherwise (logs,
// CI, pipes), so both people and scripts can follow a run.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ddpscope::apps {

class ProgressReporter {
 public:
  // interactive: draw a bar (normally isatty(stdout)); every: plain-line interval.
  ProgressReporter(int64_t total, bool interactive, int64_t every, std::FILE* out = stdout);
  void update(int64_t iteration, double loss, double samples_per_second);
  void finish(double total_seconds);

 private:
  int64_t total_;
  bool interactive_;
  int64_t every_;
  std::FILE* out_;
  double last_loss_ = 0;
  double last_rate_ = 0;
  // The bar is redrawn at most every 100 ms: fast jobs would otherwise spend their time
  // (and the terminal's) on redraws.
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace ddpscope::apps
