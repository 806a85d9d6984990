#include "progress_reporter.h"

namespace ddpscope::apps {

ProgressReporter::ProgressReporter(int64_t total, bool interactive, int64_t every, std::FILE* out)
    : total_(total), interactive_(interactive), every_(every < 1 ? 1 : every), out_(out) {}

void ProgressReporter::update(int64_t it, double loss, double rate) {
  last_loss_ = loss;
  last_rate_ = rate;
  if (interactive_) {
    const auto now = std::chrono::steady_clock::now();
    if (it != total_ && it != 1 && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * it / total_);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    const double eta = rate > 0 ? static_cast<double>(total_ - it) / rate : 0;
    std::fprintf(out_, "\r[%s] %lld/%lld  loss %.4f  %.0f samples/s  eta %.0fs ", bar.c_str(),
                 static_cast<long long>(it), static_cast<long long>(total_), loss, rate, eta);
    std::fflush(out_);
    return;
  }
  if (it == 1 || it % every_ == 0 || it == total_) {
    std::fprintf(out_, "iter %lld/%lld loss %.4f samples/s %.1f\n", static_cast<long long>(it),
                 static_cast<long long>(total_), loss, rate);
    std::fflush(out_);
  }
}

void ProgressReporter::finish(double total_seconds) {
  if (interactive_) std::fputc('\n', out_);
  std::fprintf(out_, "done: %lld iterations in %.2fs, final loss %.4f, %.1f samples/s\n",
               static_cast<long long>(total_), total_seconds, last_loss_, last_rate_);
  std::fflush(out_);
}

}  // namespace ddpscope::apps
