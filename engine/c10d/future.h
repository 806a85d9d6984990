// Future: the result of an asynchronous operation, a value or an error. Callbacks
// chained with then() run when it completes: on the completing thread (or at once if it
// already has), or handed to the future's executor when it was given one. c10d's
// collectives complete a Future of tensors (DDP comm hooks post-process a reduced bucket
// with then()); the RPC layer completes BasicFuture<rpc::Value> and gives its futures
// the agent's thread pool as executor, so a callback may block without stalling the
// thread that receives messages.
//
//   auto fut = group->allreduce(t)->get_future();
//   auto avg = fut->then([n](Future& f) { return scaled(f.value(), 1.0 / n); });
//   avg->wait();
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ddpscope/error.h"
#include "tensor/tensor.h"

namespace ddpscope::c10d {

template <typename T>
class BasicFuture : public std::enable_shared_from_this<BasicFuture<T>> {
 public:
  // Runs a callback somewhere else (a thread pool); empty: on the completing thread.
  using Executor = std::function<void(std::function<void()>)>;

  BasicFuture() = default;
  explicit BasicFuture(Executor executor) : executor_(std::move(executor)) {}

  void mark_completed(T value) {
    std::unique_lock<std::mutex> lock(mutex_);
    DDPSCOPE_CHECK(!completed_, "Future completed twice");
    value_ = std::move(value);
    finish(lock);
  }
  // The first outcome wins: an error after completion (a timeout racing a late reply)
  // is ignored. Returns whether this call completed the future.
  bool set_error(std::exception_ptr error) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (completed_) return false;
    error_ = std::move(error);
    finish(lock);
    return true;
  }
  // Like mark_completed, but a no-op (returning false) when already completed.
  bool try_mark_completed(T value) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (completed_) return false;
    value_ = std::move(value);
    finish(lock);
    return true;
  }

  bool completed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_;
  }
  // Blocks until completion; rethrows the error if there is one.
  const T& wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return completed_; });
    if (error_) std::rethrow_exception(error_);
    return value_;
  }
  // Like wait(), but first watches for completion for up to `spin` without sleeping: an
  // answer expected within microseconds (RPC through shared memory) is then taken without
  // the sleep and wake-up of a condition variable (15-20 us here, more on busy cores).
  const T& wait_spinning(std::chrono::microseconds spin) {
    const auto until = std::chrono::steady_clock::now() + spin;
    while (!done_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();  // two cores: the thread that brings the answer may need this one
    return wait();
  }
  // Waits at most `timeout`; false if the future is still pending then.
  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return completed_; });
  }
  // The value; throws if not completed or failed.
  const T& value() const {
    std::lock_guard<std::mutex> lock(mutex_);
    DDPSCOPE_CHECK(completed_, "Future::value(): not completed yet; call wait()");
    if (error_) std::rethrow_exception(error_);
    return value_;
  }
  std::exception_ptr error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

  // Runs `callback` on completion; its result (or exception) completes the new future,
  // which shares this one's executor.
  using Callback = std::function<T(BasicFuture&)>;
  std::shared_ptr<BasicFuture> then(Callback callback) {
    auto next = std::make_shared<BasicFuture>(executor_);
    add_done_callback([next, cb = std::move(callback)](BasicFuture& f) {
      if (auto e = f.error()) {
        next->set_error(e);
        return;
      }
      try {
        next->mark_completed(cb(f));
      } catch (...) {
        next->set_error(std::current_exception());
      }
    });
    return next;
  }
  // Runs `fn` on completion, for side effects.
  void add_done_callback(std::function<void(BasicFuture&)> fn) { add(std::move(fn), false); }
  // Runs `fn` on the completing thread even when this future has an executor: for a
  // callback that never blocks and is short (counting replies down, completing another
  // future). It saves the hand-off to the executor, a thread wake-up (about 50 us
  // between an RPC reply and the answer it allows, measured in the seed example).
  void add_inline_callback(std::function<void(BasicFuture&)> fn) { add(std::move(fn), true); }

 private:
  struct Callback_ {
    std::function<void(BasicFuture&)> fn;
    bool inline_;
  };
  void add(std::function<void(BasicFuture&)> fn, bool inline_) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!completed_) {
      callbacks_.push_back({std::move(fn), inline_});
      return;
    }
    lock.unlock();
    run_callback(std::move(fn), inline_);
  }
  void finish(std::unique_lock<std::mutex>& lock) {
    completed_ = true;
    done_.store(true, std::memory_order_release);
    auto callbacks = std::move(callbacks_);
    lock.unlock();
    cv_.notify_all();
    for (auto& cb : callbacks)
      run_callback(std::move(cb.fn), cb.inline_);
  }
  void run_callback(std::function<void(BasicFuture&)> fn, bool inline_) {
    if (!executor_ || inline_) {
      fn(*this);
      return;
    }
    // The executor may outlive this call: keep the future alive until the callback ran.
    executor_([self = this->shared_from_this(), fn = std::move(fn)] { fn(*self); });
  }

  Executor executor_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool completed_ = false;
  std::atomic<bool> done_{false};  // completed_, for wait_spinning to watch without the mutex
  T value_{};
  std::exception_ptr error_;
  std::vector<Callback_> callbacks_;
};

// The future of collectives: their output tensors.
using Future = BasicFuture<std::vector<Tensor>>;
extern template class BasicFuture<std::vector<Tensor>>;

}  // namespace ddpscope::c10d
