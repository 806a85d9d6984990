#include "thread_buffer.h"

#include <unistd.h>

namespace ddpscope::probes {

ThreadBuffer::ThreadBuffer(uint16_t index, pid_t tid)
    : slots_(new Event[kCapacity]), index_(index), tid_(tid), name_("thread " + std::to_string(index)) {}

size_t ThreadBuffer::drain(std::vector<Event>& out) {
  const uint64_t t = tail_.load(std::memory_order_relaxed);
  const uint64_t h = head_.load(std::memory_order_acquire);
  for (uint64_t i = t; i < h; ++i)
    out.push_back(slots_[i & (kCapacity - 1)]);
  tail_.store(h, std::memory_order_release);
  return static_cast<size_t>(h - t);
}

std::string ThreadBuffer::name() const {
  std::lock_guard<std::mutex> lock(name_mutex_);
  return name_;
}

void ThreadBuffer::set_name(std::string name) {
  std::lock_guard<std::mutex> lock(name_mutex_);
  name_ = std::move(name);
}

BufferRegistry& BufferRegistry::instance() {
  // Never destroyed: threads may still record while static destructors run.
  static BufferRegistry* registry = new BufferRegistry;
  return *registry;
}

namespace {
// Marks the buffer retired when its thread ends; the registry still owns it.
struct ThreadBufferHandle {
  std::shared_ptr<ThreadBuffer> buffer;
  ~ThreadBufferHandle() {
    if (buffer) buffer->retire();
  }
};
thread_local ThreadBufferHandle t_handle;
}  // namespace

ThreadBuffer& BufferRegistry::this_thread() {
  if (!t_handle.buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto buffer = std::make_shared<ThreadBuffer>(next_index_++, gettid());
    buffers_.push_back(buffer);
    t_handle.buffer = std::move(buffer);
  }
  return *t_handle.buffer;
}

std::vector<std::shared_ptr<ThreadBuffer>> BufferRegistry::buffers() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<ThreadBuffer>> live;
  std::vector<std::shared_ptr<ThreadBuffer>> snapshot;
  for (auto& b : buffers_) {
    snapshot.push_back(b);
    if (b->retired() && b->empty()) {
      dropped_by_removed_ += b->dropped();
    } else {
      live.push_back(b);
    }
  }
  buffers_ = std::move(live);
  return snapshot;  // a retired buffer is returned once more, so its last events ship
}

uint64_t BufferRegistry::dropped_by_removed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_by_removed_;
}

}  // namespace ddpscope::probes
