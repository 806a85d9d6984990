// A reference-counted block of bytes on one device. Tensors and their views share a
// Storage; its version counter lets autograd detect in-place changes to saved tensors.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "device.h"

namespace ddpscope {

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  // Adopts host memory owned elsewhere (a received network message): `release` runs
  // when the storage dies, instead of freeing `data`.
  Storage(void* data, size_t nbytes, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Bumped by every in-place write through a tensor on this storage.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  // Host bytes held by live CPU storages, and the peak since the last reset. Used by the
  // benchmarks to report tensor memory alongside RSS.
  static size_t cpu_bytes_in_use();
  static size_t cpu_peak_bytes();
  static void reset_cpu_peak();

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  std::atomic<uint64_t> version_{0};
  std::function<void()> release_;  // set for adopted memory
};

}  // namespace ddpscope
