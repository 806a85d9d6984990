#include "shm_ring.h"

#include <algorithm>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::rpc {

// At the start of the region; each index on a cache line of its own, so the writer's and
// the reader's stores do not bounce one line between their cores.
struct ShmRing::Header {
  uint64_t magic;
  uint32_t version;
  uint32_t reserved;
  uint64_t capacity;
  alignas(64) std::atomic<uint64_t> tail;  // bytes ever written: the writer's
  alignas(64) std::atomic<uint64_t> head;  // bytes ever read: the reader's
  alignas(64) std::atomic<uint32_t> reader_sleeping;
  alignas(64) std::atomic<uint32_t> writer_waiting;
};

namespace {
constexpr uint64_t kMagic = 0x474e495250444453ULL;  // "SDDPRING" little-endian
constexpr uint32_t kVersion = 1;
constexpr size_t kDataOffset = 4096;         // the data starts on its own page
constexpr size_t kPublishEvery = 64 * 1024;  // a large write is published in parts of this
static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free,
              "the ring's indices are shared between processes: they must be lock-free");

bool power_of_two(uint64_t n) { return n >= 64 && (n & (n - 1)) == 0; }
}  // namespace

size_t ShmRing::region_bytes(size_t capacity) { return kDataOffset + capacity; }

void ShmRing::format(void* region, size_t capacity) {
  DDPSCOPE_CHECK(power_of_two(capacity), "a shared-memory ring of ", capacity, " bytes: use a power of two");
  auto* h = new (region) Header{};
  h->magic = kMagic;
  h->version = kVersion;
  h->capacity = capacity;
}

ShmRing::ShmRing(void* region, size_t bytes) : header_(static_cast<Header*>(region)) {
  DDPSCOPE_CHECK(bytes >= kDataOffset && header_->magic == kMagic && header_->version == kVersion,
                 "the shared memory a worker sent is not a ddpscope RPC ring (another version of ddpscope?)");
  capacity_ = header_->capacity;
  DDPSCOPE_CHECK(power_of_two(capacity_) && capacity_ <= bytes - kDataOffset, "a shared-memory ring of ", capacity_,
                 " bytes in a region of ", bytes, ": not a ring this version writes");
  data_ = static_cast<uint8_t*>(region) + kDataOffset;
}

bool ShmRing::broken() const {
  const uint64_t tail = header_->tail.load(std::memory_order_acquire);
  const uint64_t head = header_->head.load(std::memory_order_acquire);
  return tail - head > capacity_;  // also when head passed tail (the difference wraps)
}

size_t ShmRing::room() const {
  const uint64_t used = header_->tail.load(std::memory_order_relaxed) - header_->head.load(std::memory_order_acquire);
  return used > capacity_ ? 0 : capacity_ - used;
}

ssize_t ShmRing::write_some(std::span<iovec> pieces) {
  if (broken()) return -1;
  uint64_t tail = header_->tail.load(std::memory_order_relaxed);
  size_t free = room();
  size_t total = 0, unpublished = 0;
  for (iovec& v : pieces) {
    while (v.iov_len > 0 && free > 0) {
      const size_t at = tail & (capacity_ - 1);
      const size_t n = std::min({v.iov_len, free, capacity_ - at, kPublishEvery});  // up to the ring's end
      std::memcpy(data_ + at, v.iov_base, n);
      v.iov_base = static_cast<uint8_t*>(v.iov_base) + n;
      v.iov_len -= n;
      tail += n;
      free -= n;
      total += n;
      unpublished += n;
      if (unpublished >= kPublishEvery) {  // a reader that is awake copies this out while we go on
        header_->tail.store(tail, std::memory_order_release);
        unpublished = 0;
      }
    }
    if (v.iov_len > 0) break;
  }
  if (unpublished > 0) header_->tail.store(tail, std::memory_order_release);
  return static_cast<ssize_t>(total);
}

bool ShmRing::reader_needs_wake() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the tail's store before the flag's load
  return header_->reader_sleeping.load(std::memory_order_relaxed) != 0;
}

bool ShmRing::wait_for_room() {
  header_->writer_waiting.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return room() > 0;
}

void ShmRing::stop_waiting_for_room() { header_->writer_waiting.store(0, std::memory_order_relaxed); }

size_t ShmRing::readable() const {
  const uint64_t tail = header_->tail.load(std::memory_order_acquire);
  const uint64_t used = tail - header_->head.load(std::memory_order_relaxed);
  return used > capacity_ ? 0 : used;
}

size_t ShmRing::read(uint8_t* into, size_t room) {
  uint64_t head = header_->head.load(std::memory_order_relaxed);
  size_t left = std::min(readable(), room);
  const size_t total = left;
  while (left > 0) {
    const size_t at = head & (capacity_ - 1);
    const size_t n = std::min(left, capacity_ - at);
    std::memcpy(into, data_ + at, n);
    into += n;
    head += n;
    left -= n;
  }
  if (total > 0) header_->head.store(head, std::memory_order_release);
  return total;
}

bool ShmRing::writer_needs_wake() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the head's store before the flag's load
  return header_->writer_waiting.load(std::memory_order_relaxed) != 0;
}

bool ShmRing::going_to_sleep() {
  header_->reader_sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return readable() > 0 || broken();
}

void ShmRing::awake() { header_->reader_sleeping.store(0, std::memory_order_relaxed); }

}  // namespace ddpscope::rpc
