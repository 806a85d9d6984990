// Shows training progress: a redrawn bar on a terminal, plain lines otherwise (logs,
// CI, pipes), or "@ddpscope {json}" lines for programs that follow a job (the desktop
// app), so people, scripts and tools can all follow a run.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace ddpscope::apps {

enum class ProgressStyle { Bar, Lines, Json };

// "auto" (a bar on a terminal, lines otherwise), "bar", "lines" or "json".
ProgressStyle progress_style(const std::string& option, std::FILE* out = stdout);

class ProgressReporter {
 public:
  // every: the interval of plain lines. total 0: not known (a PyTorch script's loop),
  // shown without a bar's end or an eta.
  ProgressReporter(int64_t total, ProgressStyle style, int64_t every, std::FILE* out = stdout);
  // No loss: the job does not say it (a script that never calls ddpscope.log).
  void update(int64_t iteration, std::optional<double> loss, double samples_per_second);
  // stopped_at >= 0: training ended early after that many iterations (--join-throw).
  void finish(double total_seconds, int64_t stopped_at = -1);

 private:
  // At most every 100 ms (first and last always): fast jobs would otherwise spend their
  // time, and the terminal's or the reader's, on redraws.
  bool due(int64_t iteration);
  void warn_nonfinite(double loss) const;
  void draw_bar(int64_t iteration, double rate) const;
  // " loss 0.1234", or nothing when the job does not say its loss.
  std::string loss_text() const;

  int64_t total_;
  ProgressStyle style_;
  int64_t every_;
  std::FILE* out_;
  std::optional<double> last_loss_;
  int64_t last_iteration_ = 0;
  double last_rate_ = 0;
  int64_t nonfinite_since_ = -1;  // the first iteration whose loss was not finite
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace ddpscope::apps
