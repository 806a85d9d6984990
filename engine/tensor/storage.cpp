#include "storage.h"

#include <cstdlib>
#include <new>

#include "cuda_runtime_facade.h"
#include "error.h"

namespace ddpscope {
namespace {
// 64-byte alignment: a cache line, and enough for any SIMD load OpenBLAS or our loops use.
constexpr size_t kAlignment = 64;
std::atomic<size_t> g_cpu_in_use{0};
std::atomic<size_t> g_cpu_peak{0};

void note_cpu_alloc(size_t n) {
  const size_t now = g_cpu_in_use.fetch_add(n, std::memory_order_relaxed) + n;
  size_t peak = g_cpu_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_cpu_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (nbytes == 0) return;
  if (device.is_cpu()) {
    const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    data_ = std::aligned_alloc(kAlignment, rounded);
    if (!data_) {
      throw DDPSCOPE_ERROR("out of host memory allocating ", nbytes, " bytes");
    }
    note_cpu_alloc(nbytes);
  } else {
    data_ = cuda::device_malloc(nbytes, device.index);
  }
}

Storage::~Storage() {
  if (!data_) return;
  if (device_.is_cpu()) {
    std::free(data_);
    g_cpu_in_use.fetch_sub(nbytes_, std::memory_order_relaxed);
  } else {
    cuda::device_free(data_, device_.index);
  }
}

size_t Storage::cpu_bytes_in_use() { return g_cpu_in_use.load(); }
size_t Storage::cpu_peak_bytes() { return g_cpu_peak.load(); }
void Storage::reset_cpu_peak() { g_cpu_peak.store(g_cpu_in_use.load()); }

}  // namespace ddpscope
