#include "progress_reporter.h"

#include <unistd.h>

#include <algorithm>
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

void ProgressReporter::update(int64_t it, std::optional<double> loss, double rate) {
  last_loss_ = loss;
  last_rate_ = rate;
  last_iteration_ = it;
  // The first loss that is not finite is said once, whatever the display: the iterations
  // after it are wasted, and a line that only ever said "loss nan" is easy to miss.
  const bool first_nonfinite = loss && !std::isfinite(*loss) && nonfinite_since_ < 0;
  if (first_nonfinite) nonfinite_since_ = it;
  switch (style_) {
    case ProgressStyle::Json:
      if (due(it) || first_nonfinite) {
        job_events::write_event(out_, job_events::Progress{it, total_, loss, rate, nonfinite_since_});
      }
      return;
    case ProgressStyle::Bar:
      if (!due(it)) return;
      draw_bar(it, rate);
      if (first_nonfinite) {
        std::fputc('\n', out_);
        warn_nonfinite(*loss);
      }
      std::fflush(out_);
      return;
    case ProgressStyle::Lines:
      if (it == 1 || it % every_ == 0 || it == total_ || first_nonfinite) {
        if (total_ > 0)
          std::fprintf(out_, "iter %lld/%lld%s samples/s %.1f\n", static_cast<long long>(it),
                       static_cast<long long>(total_), loss_text().c_str(), rate);
        else
          std::fprintf(out_, "iter %lld%s samples/s %.1f\n", static_cast<long long>(it), loss_text().c_str(), rate);
        if (first_nonfinite) warn_nonfinite(*loss);
        std::fflush(out_);
      }
      return;
  }
}

void ProgressReporter::draw_bar(int64_t it, double rate) const {
  if (total_ <= 0) {  // no end known: the count and the rate
    std::fprintf(out_, "\riter %lld%s  %.0f samples/s ", static_cast<long long>(it), loss_text().c_str(), rate);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * std::min(it, total_) / total_);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  const double eta = rate > 0 ? static_cast<double>(total_ - it) / rate : 0;
  std::fprintf(out_, "\r[%s] %lld/%lld %s  %.0f samples/s  eta %.0fs ", bar.c_str(), static_cast<long long>(it),
               static_cast<long long>(total_), loss_text().c_str(), rate, eta);
}

std::string ProgressReporter::loss_text() const {
  if (!last_loss_) return {};
  char text[48];
  std::snprintf(text, sizeof text, " loss %.4f", *last_loss_);
  return text;
}

void ProgressReporter::warn_nonfinite(double loss) const {
  std::fprintf(out_,
               "warning: the loss is %s from iteration %lld on; training goes on, but the model "
               "is lost (a learning rate too high?). `ddpscope-cli stats` on the run file names the "
               "first rank and parameter whose gradient was not finite\n",
               std::isnan(loss) ? "nan" : "infinite", static_cast<long long>(nonfinite_since_));
}

void ProgressReporter::finish(double total_seconds, int64_t stopped_at) {
  const int64_t iterations = stopped_at >= 0 ? stopped_at : total_ > 0 ? total_ : last_iteration_;
  if (style_ == ProgressStyle::Json) {
    job_events::write_event(out_, job_events::Done{total_seconds, iterations, stopped_at, last_rate_, last_loss_});
    return;
  }
  if (style_ == ProgressStyle::Bar) std::fputc('\n', out_);
  const std::string of_total = stopped_at >= 0 && total_ > 0 ? detail::concat(" of ", total_) : "";
  std::fprintf(out_, "done: %lld%s iterations in %.2fs%s%s, %.1f samples/s\n", static_cast<long long>(iterations),
               of_total.c_str(), total_seconds, last_loss_ ? ", final" : "", loss_text().c_str(), last_rate_);
  std::fflush(out_);
}

}  // namespace ddpscope::apps
