#include "thread_pool.h"

#include "probe.h"
#include "ddpscope/error.h"

namespace ddpscope::rpc {

ThreadPool::ThreadPool(int core, int max, std::chrono::milliseconds idle_exit)
    : core_(core), max_(max), idle_exit_(idle_exit) {
  DDPSCOPE_CHECK(core >= 1 && max >= core, "thread pool: need 1 <= core (", core, ") <= max (", max, ")");
  std::lock_guard<std::mutex> lock(mutex_);
  for (int i = 0; i < core_; ++i) {
    ++alive_;
    threads_.emplace_back([this, n = started_++] { run(n); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

bool ThreadPool::submit(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ended_.empty()) join_ended(lock);
  tasks_.push_back(std::move(task));
  // Idle threads already woken by earlier submits will take earlier tasks: grow when
  // the queue is longer than the threads free to take it.
  if (static_cast<int>(tasks_.size()) > idle_) {
    if (alive_ >= max_) {
      lock.unlock();
      cv_.notify_one();
      return false;
    }
    ++alive_;
    threads_.emplace_back([this, n = started_++] { run(n); });
  }
  lock.unlock();
  cv_.notify_one();
  return true;
}

void ThreadPool::join_ended(std::unique_lock<std::mutex>& lock) {
  std::vector<std::thread> done;
  for (auto id : ended_) {
    for (auto it = threads_.begin(); it != threads_.end(); ++it) {
      if (it->get_id() == id) {
        done.push_back(std::move(*it));
        threads_.erase(it);
        break;
      }
    }
  }
  ended_.clear();
  lock.unlock();
  for (auto& t : done)
    t.join();  // they have left run(): this returns at once
  lock.lock();
}

int ThreadPool::threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return alive_;
}

void ThreadPool::run(int number) {
  // Named for the run file's lanes ("rank 0 · rpc: pool 2"), not "thread 7".
  probes::set_thread_name("rpc: pool " + std::to_string(number));
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    const bool woke = cv_.wait_for(lock, idle_exit_, [&] { return stopping_ || !tasks_.empty(); });
    --idle_;
    if (tasks_.empty()) {
      if (stopping_ || (!woke && alive_ > core_)) break;
      continue;
    }
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();          // tasks catch their own errors (the agent turns them into error replies)
    task = nullptr;  // destroy captured state outside the lock
    lock.lock();
  }
  --alive_;
  if (!stopping_) ended_.push_back(std::this_thread::get_id());
}

}  // namespace ddpscope::rpc
