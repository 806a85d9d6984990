// The process-wide state behind probe.h: the on/off switch, the current iteration,
// interned names and thread names.
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "probe.h"
#include "thread_buffer.h"

namespace ddpscope::probes {
namespace detail {

std::atomic<bool> g_enabled{false};
std::atomic<int32_t> g_iteration{-1};

void push(const Event& event) noexcept {
  BufferRegistry::instance().this_thread().push(event);
}

}  // namespace detail

namespace {
std::atomic<bool> g_graph_requested{false};
}  // namespace

void request_graph_snapshot() noexcept {
  g_graph_requested.store(true);
}
bool take_graph_request() noexcept {
  return g_graph_requested.exchange(false);
}

void set_enabled(bool on) noexcept {
  if constexpr (kCompiledIn) detail::g_enabled.store(on, std::memory_order_relaxed);
}

const char* intern(std::string_view name) {
  // A per-thread cache in front of the shared set keeps the lock off the common path.
  thread_local std::unordered_map<std::string, const char*> cache;
  std::string key(name);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  static std::mutex mutex;
  static auto* names = new std::unordered_set<std::string>;  // never freed: pointers escape
  const char* stable;
  {
    std::lock_guard<std::mutex> lock(mutex);
    stable = names->insert(key).first->c_str();
  }
  cache.emplace(std::move(key), stable);
  return stable;
}

void set_thread_name(std::string_view name) {
  BufferRegistry::instance().this_thread().set_name(std::string(name));
}

const char* kind_name(Kind kind) {
  static constexpr const char* kNames[kNumKinds] = {
      "iteration",   "forward",      "backward",  "optimizer",     "autograd_node", "grad_ready",
      "bucket_copy", "bucket_ready", "allreduce", "comm_hook",     "finalize",      "pg_op",
      "barrier",     "rpc_send",     "rpc_recv",  "dist_backward", "mark"};
  const auto i = static_cast<int>(kind);
  return i < kNumKinds ? kNames[i] : "unknown";
}

}  // namespace ddpscope::probes
