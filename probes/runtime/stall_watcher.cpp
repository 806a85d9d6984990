#include "stall_watcher.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include "native_stacks.h"
#include "probe.h"
#include "records.h"

namespace ddpscope::probes {

namespace {
constexpr double kDefaultAfterS = 3.0;
std::atomic<bool> g_stacks_requested{false};
}  // namespace

void request_stacks() noexcept { g_stacks_requested.store(true); }
bool take_stacks_request() noexcept { return g_stacks_requested.exchange(false); }

double stacks_after_seconds() {
  const char* text = std::getenv("DDPSCOPE_STACKS_AFTER_S");
  if (!text || !*text) return kDefaultAfterS;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || seconds < 0) {
    std::fprintf(stderr, "ddpscope: DDPSCOPE_STACKS_AFTER_S='%s' is not a number of seconds; using %g\n", text,
                 kDefaultAfterS);
    return kDefaultAfterS;
  }
  return seconds;
}

void record_native_stacks(const std::string& reason, int64_t stalled_ns, const std::vector<int64_t>& skip) {
  const int64_t t_ns = now_ns();
  std::string threads;
  // Taken from a thread of its own: the capture leaves out the thread that takes it.
  std::thread([&] { threads = native_stacks_json(capture_native_stacks({}, skip)); }).join();
  queue_record(nlohmann::json{{"type", "stacks"},
                              {"language", "native"},
                              {"t_ns", t_ns},
                              {"reason", reason},
                              {"stalled_ns", stalled_ns},
                              {"iteration", current_iteration()},
                              {"threads", nlohmann::json::parse(threads)}}
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

StallWatcher::StallWatcher(double after_s, Hooks hooks) : after_s_(after_s), hooks_(std::move(hooks)) {
  // Always running: it also answers the user's asks (`hang --ask`); after_s <= 0 turns off
  // the stall captures only.
  thread_ = std::thread([this] { watch(); });
}

StallWatcher::~StallWatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StallWatcher::wait_for_capture(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  acted_.wait_for(lock, limit, [this] { return !acting_; });
}

void StallWatcher::watch() {
  using Clock = std::chrono::steady_clock;
  const auto tick = std::chrono::duration<double>(after_s_ > 0 ? std::min(0.5, after_s_ / 4) : 0.5);
  const auto self = static_cast<int64_t>(syscall(SYS_gettid));
  uint64_t seen = hooks_.progress();
  auto since = Clock::now();
  bool taken = false;
  std::unique_lock<std::mutex> lock(mutex_);
  // on_stall runs unlocked (it takes the stacks); acting_ says so to wait_for_capture.
  const auto act = [&](int64_t stalled_ns, bool asked) {
    acting_ = true;
    lock.unlock();
    hooks_.on_stall(stalled_ns, self, asked);
    lock.lock();
    acting_ = false;
    acted_.notify_all();
  };
  while (!wake_.wait_for(lock, tick, [this] { return stop_; })) {
    const auto now = Clock::now();
    const uint64_t progress = hooks_.progress();
    if (take_stacks_request()) {
      act(progress == seen ? std::chrono::duration_cast<std::chrono::nanoseconds>(now - since).count() : 0, true);
    }
    if (progress != seen) {
      seen = progress;
      since = now;
      taken = false;
      continue;
    }
    const double stalled_s = std::chrono::duration<double>(now - since).count();
    const double stall_s = std::max(after_s_, 10 * hooks_.median_iteration_ns() / 1e9);
    if (after_s_ > 0 && !taken && stalled_s >= stall_s) {
      taken = true;
      act(static_cast<int64_t>(stalled_s * 1e9), false);
    }
  }
}

}  // namespace ddpscope::probes
