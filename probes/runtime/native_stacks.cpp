#include "native_stacks.h"

#include <dirent.h>
#include <signal.h>
#include <ucontext.h>
#include <unwind.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "native_symbols.h"

namespace ddpscope::probes {
namespace {

constexpr size_t kMaxAddresses = 128;  // kept by the handler; deeper frames are only counted
constexpr int64_t kMaxCounted = 100000;

// The one thread being asked: its tid and where the ask stands, in one word, so that a
// handler that runs late (after the ask moved on to another thread) cannot write.
enum : uint64_t { kIdle = 0, kWaiting = 1, kWriting = 2, kDone = 3 };
uint64_t ask_word(pid_t tid, uint64_t phase) { return (static_cast<uint64_t>(tid) << 8) | phase; }

struct Ask {
  std::atomic<uint64_t> word{kIdle};
  uintptr_t addresses[kMaxAddresses];
  size_t kept = 0;
  int64_t total = 0;
};
Ask g_ask;
std::mutex g_capture_mutex;  // one capture at a time

// One walk from inside the handler: frames are kept from the interrupted one on (the
// handler's own and the signal's trampoline come first and are skipped).
struct Walk {
  uintptr_t interrupted = 0;
  bool reached = false;
  size_t kept = 0;
  int64_t total = 0;
};

_Unwind_Reason_Code on_frame(_Unwind_Context* context, void* arg) {
  auto* walk = static_cast<Walk*>(arg);
  int before_instruction = 0;
  const uintptr_t ip = _Unwind_GetIPInfo(context, &before_instruction);
  if (!walk->reached) {
    if (ip != walk->interrupted) return _URC_NO_REASON;
    walk->reached = true;
  }
  if (walk->kept < kMaxAddresses) g_ask.addresses[walk->kept++] = ip;
  return ++walk->total < kMaxCounted ? _URC_NO_REASON : _URC_END_OF_STACK;
}

// Runs in the asked thread, inside whatever it was doing. GCC's own unwinder (the one C++
// exceptions use; since GCC 12 and glibc 2.35 it finds unwind tables without a lock) walks
// the stack through the signal's frame.
void on_capture_signal(int, siginfo_t*, void* context) {
  const int saved_errno = errno;
  const auto self = static_cast<pid_t>(syscall(SYS_gettid));
  uint64_t expected = ask_word(self, kWaiting);
  if (g_ask.word.compare_exchange_strong(expected, ask_word(self, kWriting))) {
    Walk walk;
    walk.interrupted = static_cast<uintptr_t>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
    _Unwind_Backtrace(on_frame, &walk);
    if (!walk.reached) {  // the unwinder could not pass the signal's frame: the interrupted place alone
      g_ask.addresses[0] = walk.interrupted;
      walk.kept = walk.total = 1;
    }
    g_ask.kept = walk.kept;
    g_ask.total = walk.total;
    g_ask.word.store(ask_word(self, kDone), std::memory_order_release);
  }
  errno = saved_errno;
}

int capture_signal() {
  // Real-time signals queue and are free for programs (glibc keeps the first ones for
  // itself and moves SIGRTMIN past them); OpenMPI and gloo use none of them.
  static const int sig = SIGRTMIN + 5;
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_capture_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  });
  return sig;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// This process's threads, the main thread first, without the caller's.
std::vector<pid_t> other_threads() {
  std::vector<pid_t> tids;
  const auto self = static_cast<pid_t>(syscall(SYS_gettid));
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/task"), closedir);
  if (!dir) return tids;
  while (dirent* e = readdir(dir.get())) {
    const pid_t tid = static_cast<pid_t>(std::atoll(e->d_name));
    if (tid > 0 && tid != self) tids.push_back(tid);
  }
  const pid_t main = getpid();
  std::sort(tids.begin(), tids.end(),
            [main](pid_t a, pid_t b) { return std::make_pair(a != main, a) < std::make_pair(b != main, b); });
  return tids;
}

// True when the thread blocks `signal` (its SigBlk mask in /proc): it would never answer, and
// asking would cost the whole answer time (ZeroMQ's two background threads block every
// signal: 400 of a capture's 500 ms went on waiting for them).
bool blocks_signal(pid_t tid, int signal) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("SigBlk:", 0) != 0) continue;
    const uint64_t mask = std::strtoull(line.c_str() + 7, nullptr, 16);
    return signal >= 1 && signal <= 64 && (mask >> (signal - 1)) & 1;
  }
  return false;  // not readable: ask, and wait as before
}

// The thread's return addresses, innermost first; false when it did not answer in time.
bool ask_thread(pid_t tid, int signal, int answer_ms, std::vector<uintptr_t>& addresses, int64_t& total) {
  if (blocks_signal(tid, signal)) return false;
  g_ask.word.store(ask_word(tid, kWaiting), std::memory_order_release);
  if (syscall(SYS_tgkill, getpid(), tid, signal) != 0) {
    g_ask.word.store(kIdle);
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(answer_ms);
  while (g_ask.word.load(std::memory_order_acquire) != ask_word(tid, kDone)) {
    uint64_t waiting = ask_word(tid, kWaiting);
    if (std::chrono::steady_clock::now() > deadline && g_ask.word.compare_exchange_strong(waiting, kIdle))
      return false;  // a late handler now finds the ask gone
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  addresses.assign(g_ask.addresses, g_ask.addresses + g_ask.kept);
  total = g_ask.total;
  g_ask.word.store(kIdle);
  return true;
}

}  // namespace

std::vector<NativeThreadStack> capture_native_stacks(const NativeStackLimits& limits,
                                                     const std::vector<int64_t>& skip) {
  std::lock_guard<std::mutex> lock(g_capture_mutex);
  const int signal = capture_signal();
  struct Raw {
    NativeThreadStack stack;
    std::vector<uintptr_t> addresses;
    int64_t total = 0;
  };
  std::vector<Raw> raw;
  for (pid_t tid : other_threads()) {
    if (raw.size() == limits.max_threads) break;
    if (std::find(skip.begin(), skip.end(), tid) != skip.end()) continue;
    Raw r;
    r.stack.tid = tid;
    r.stack.name = read_line("/proc/self/task/" + std::to_string(tid) + "/comm");
    r.stack.answered = ask_thread(tid, signal, limits.answer_ms, r.addresses, r.total);
    raw.push_back(std::move(r));
  }
  // Symbols after every thread answered: reading them takes far longer than the asks.
  const NativeSymbols symbols;
  std::vector<NativeThreadStack> out;
  for (Raw& r : raw) {
    // Up to max_frames frames (an address may give several: the functions inlined there);
    // the addresses not shown are counted as left out.
    size_t used = 0;
    for (; used < r.addresses.size() && r.stack.frames.size() < limits.max_frames; ++used)
      for (NativeFrame& f : symbols.frames_at(r.addresses[used], used > 0))
        if (r.stack.frames.size() < limits.max_frames) r.stack.frames.push_back(std::move(f));
    r.stack.omitted = r.total - static_cast<int64_t>(used);
    out.push_back(std::move(r.stack));
  }
  return out;
}

std::string native_stacks_json(const std::vector<NativeThreadStack>& threads) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : threads) {
    nlohmann::json frames = nlohmann::json::array();
    for (const auto& f : t.frames)
      frames.push_back({{"file", f.file}, {"line", f.line}, {"function", f.function}, {"code", ""}});
    nlohmann::json thread = {{"thread", t.tid}, {"name", t.name}, {"frames", frames}, {"omitted", t.omitted}};
    if (!t.answered) thread["answered"] = false;
    out.push_back(std::move(thread));
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ddpscope::probes
