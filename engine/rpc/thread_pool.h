// ThreadPool: runs incoming RPC calls. It keeps `core` threads and grows when a task
// arrives while every thread is busy, up to `max`; a thread above `core` that stays idle
// for `idle_exit` ends.
//
// The rule that keeps nested calls from deadlocking: a function run by the pool may make
// blocking RPCs of its own (a chain A -> B -> C -> A holds one thread per hop while it
// waits), because a busy pool starts another thread for the next task instead of
// queueing it behind the blocked ones. Only `max` threads blocked at once (a chain that
// deep) would queue; the agent reports that as an error rather than waiting silently.
//
// Thread-safe. The destructor runs the tasks already queued, then joins every thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <list>
#include <vector>

namespace ddpscope::rpc {

class ThreadPool {
 public:
  ThreadPool(int core, int max, std::chrono::milliseconds idle_exit = std::chrono::seconds(10));
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // False when the pool is at `max` threads, all busy: the task is queued anyway.
  bool submit(std::function<void()> task);
  int threads() const;
  int max_threads() const { return max_; }

 private:
  void run(int number);  // number: the thread's name in the run file

  const int core_;
  const int max_;
  const std::chrono::milliseconds idle_exit_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::list<std::thread> threads_;
  std::vector<std::thread::id> ended_;  // threads that left run(), joined by the next submit
  void join_ended(std::unique_lock<std::mutex>& lock);
  int alive_ = 0;
  int started_ = 0;  // threads ever started: numbers their names
  int idle_ = 0;
  bool stopping_ = false;
};

}  // namespace ddpscope::rpc
