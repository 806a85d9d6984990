#include "progress_reporter.h"

#include <unistd.h>

#include <cmath>

#include "json_number.h"
#include "ddpscope/error.h"
#include "worker_protocol.h"

namespace ddpscope::apps {

ProgressStyle progress_style(const std::string& option, std::FILE* out) {
  if (option == "bar") return ProgressStyle::Bar;
  if (option == "lines") return ProgressStyle::Lines;
  if (option == "json") return ProgressStyle::Json;
  DDPSCOPE_CHECK(option == "auto", "--progress: unknown style '", option, "'; choose auto, bar, lines or json");
  return isatty(fileno(out)) == 1 ? ProgressStyle::Bar : ProgressStyle::Lines;
}

ProgressReporter::ProgressReporter(int64_t total, ProgressStyle style, int64_t every, std::FILE* out)
    : total_(total), style_(style), every_(every < 1 ? 1 : every), out_(out) {}

bool ProgressReporter::due(int64_t it) {
  const auto now = std::chrono::steady_clock::now();
  if (it != total_ && it != 1 && now - last_draw_ < std::chrono::milliseconds(100)) return false;
  last_draw_ = now;
  return true;
}

void ProgressReporter::update(int64_t it, double loss, double rate) {
  last_loss_ = loss;
  last_rate_ = rate;
  // The first loss that is not finite is said once, whatever the display: the iterations
  // after it are wasted, and a line that only ever said "loss nan" is easy to miss.
  const bool first_nonfinite = !std::isfinite(loss) && nonfinite_since_ < 0;
  if (first_nonfinite) nonfinite_since_ = it;
  switch (style_) {
    case ProgressStyle::Json:
      if (due(it) || first_nonfinite) {
        nlohmann::json ev = {{"event", "progress"},
                             {"iter", it},
                             {"total", total_},
                             {"loss", probes::json_number(loss)},
                             {"samples_per_s", rate}};
        if (nonfinite_since_ >= 0) ev["nonfinite_since"] = nonfinite_since_;
        emit_worker_event(out_, ev);
      }
      return;
    case ProgressStyle::Bar: {
      if (!due(it)) return;
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(kWidth * it / total_);
      std::string bar(static_cast<size_t>(filled), '#');
      bar.resize(kWidth, '.');
      const double eta = rate > 0 ? static_cast<double>(total_ - it) / rate : 0;
      std::fprintf(out_, "\r[%s] %lld/%lld  loss %.4f  %.0f samples/s  eta %.0fs ", bar.c_str(),
                   static_cast<long long>(it), static_cast<long long>(total_), loss, rate, eta);
      if (first_nonfinite) {
        std::fputc('\n', out_);
        warn_nonfinite(loss);
      }
      std::fflush(out_);
      return;
    }
    case ProgressStyle::Lines:
      if (it == 1 || it % every_ == 0 || it == total_ || first_nonfinite) {
        std::fprintf(out_, "iter %lld/%lld loss %.4f samples/s %.1f\n", static_cast<long long>(it),
                     static_cast<long long>(total_), loss, rate);
        if (first_nonfinite) warn_nonfinite(loss);
        std::fflush(out_);
      }
      return;
  }
}

void ProgressReporter::warn_nonfinite(double loss) const {
  std::fprintf(out_,
               "warning: the loss is %s from iteration %lld on; training goes on, but the model "
               "is lost (a learning rate too high?). `ddpscope-cli stats` on the run file names the "
               "first rank and parameter whose gradient was not finite\n",
               std::isnan(loss) ? "nan" : "infinite", static_cast<long long>(nonfinite_since_));
}

void ProgressReporter::finish(double total_seconds) {
  if (style_ == ProgressStyle::Json) {
    emit_worker_event(out_, {{"event", "done"},
                             {"iterations", total_},
                             {"seconds", total_seconds},
                             {"loss", probes::json_number(last_loss_)},
                             {"samples_per_s", last_rate_}});
    return;
  }
  if (style_ == ProgressStyle::Bar) std::fputc('\n', out_);
  std::fprintf(out_, "done: %lld iterations in %.2fs, final loss %.4f, %.1f samples/s\n",
               static_cast<long long>(total_), total_seconds, last_loss_, last_rate_);
  std::fflush(out_);
}

}  // namespace ddpscope::apps
