// The process-wide state behind probe.h: the on/off switch, the current iteration,
// interned names and thread names.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "probe.h"
#include "thread_buffer.h"

namespace ddpscope::probes {
namespace detail {

std::atomic<bool> g_enabled{false};
std::atomic<int32_t> g_iteration{-1};

void push(const Event& event) noexcept { BufferRegistry::instance().this_thread().push(event); }

}  // namespace detail

namespace {
std::atomic<bool> g_graph_requested{false};
struct Interned {
  std::string name;
  SourceLocation location;
};
}  // namespace

void request_graph_snapshot() noexcept { g_graph_requested.store(true); }
bool take_graph_request() noexcept { return g_graph_requested.exchange(false); }

void set_enabled(bool on) noexcept {
  if constexpr (kCompiledIn) detail::g_enabled.store(on, std::memory_order_relaxed);
}

const SourceLocation* intern(std::string_view name, const char* file, uint32_t line) {
  // A per-thread cache in front of the shared table keeps the lock off the common path.
  std::string key(name);
  key += '\0';
  key += file;
  key += ':';
  key += std::to_string(line);
  thread_local std::unordered_map<std::string, const SourceLocation*> cache;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  static std::mutex mutex;
  // Never freed: events point into it until they are shipped, possibly after exit began.
  static auto* table = new std::unordered_map<std::string, std::unique_ptr<Interned>>;
  const SourceLocation* stable;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = (*table)[key];
    if (!slot) {
      slot = std::make_unique<Interned>();
      slot->name = std::string(name);
      slot->location = {slot->name.c_str(), file, line};
    }
    stable = &slot->location;
  }
  cache.emplace(std::move(key), stable);
  return stable;
}

const SourceLocation* intern(const char* static_name, const char* file, uint32_t line) {
  struct Key {
    const char* name;
    const char* file;
    uint32_t line;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.name) ^ (std::hash<const void*>()(k.file) << 1) ^ k.line;
    }
  };
  thread_local std::unordered_map<Key, const SourceLocation*, KeyHash> cache;
  const Key key{static_name, file, line};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const SourceLocation* stable = intern(std::string_view(static_name), file, line);
  cache.emplace(key, stable);
  return stable;
}

void set_thread_name(std::string_view name) { BufferRegistry::instance().this_thread().set_name(std::string(name)); }

}  // namespace ddpscope::probes
