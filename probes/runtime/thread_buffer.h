// ThreadBuffer: one thread's events, a single-producer single-consumer ring. The
// owning thread pushes (never blocks: a full ring drops the event and counts it); the
// shipper thread drains. BufferRegistry keeps every thread's buffer alive until it
// has been drained, even after its thread ended.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "event.h"

namespace ddpscope::probes {

class ThreadBuffer {
 public:
  static constexpr uint64_t kCapacity = 1 << 15;  // 2 MiB of events per thread

  ThreadBuffer(uint16_t index, pid_t tid);

  // Producer side (the owning thread only).
  void push(const Event& e) noexcept {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - cached_tail_ >= kCapacity) {
      // Looks full: refresh the consumer's position (a shared cache line) only now.
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h - cached_tail_ >= kCapacity) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
      }
    }
    slots_[h & (kCapacity - 1)] = e;
    head_.store(h + 1, std::memory_order_release);
  }

  // Consumer side: appends the events pushed so far to `out`; returns how many.
  size_t drain(std::vector<Event>& out);
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed); }

  uint16_t index() const { return index_; }
  pid_t tid() const { return tid_; }
  std::string name() const;
  void set_name(std::string name);
  // The owning thread ended: drop the buffer once drained.
  void retire() { retired_.store(true, std::memory_order_release); }
  bool retired() const { return retired_.load(std::memory_order_acquire); }

 private:
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;
  std::atomic<uint64_t> dropped_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::unique_ptr<Event[]> slots_;
  const uint16_t index_;
  const pid_t tid_;
  mutable std::mutex name_mutex_;
  std::string name_;
  std::atomic<bool> retired_{false};
};

// All threads' buffers in this process.
class BufferRegistry {
 public:
  static BufferRegistry& instance();
  // The calling thread's buffer, created and registered on first use.
  ThreadBuffer& this_thread();
  // A snapshot of the live buffers; removes retired ones that are empty.
  std::vector<std::shared_ptr<ThreadBuffer>> buffers();
  // Events dropped by buffers already removed.
  uint64_t dropped_by_removed() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers_;
  uint16_t next_index_ = 0;
  uint64_t dropped_by_removed_ = 0;
};

}  // namespace ddpscope::probes
