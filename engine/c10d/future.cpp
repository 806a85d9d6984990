#include "future.h"

#include "tensor/error.h"

namespace ddpscope::c10d {

void Future::mark_completed(std::vector<Tensor> value) {
  std::unique_lock<std::mutex> lock(mutex_);
  DDPSCOPE_CHECK(!completed_, "Future completed twice");
  value_ = std::move(value);
  finish(lock);
}

void Future::set_error(std::exception_ptr error) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (completed_) return;  // first outcome wins (a timeout racing a late completion)
  error_ = std::move(error);
  finish(lock);
}

void Future::finish(std::unique_lock<std::mutex>& lock) {
  completed_ = true;
  auto callbacks = std::move(callbacks_);
  lock.unlock();
  cv_.notify_all();
  for (auto& cb : callbacks)
    cb(*this);
}

bool Future::completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

const std::vector<Tensor>& Future::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return completed_; });
  if (error_) std::rethrow_exception(error_);
  return value_;
}

const std::vector<Tensor>& Future::value() const {
  std::lock_guard<std::mutex> lock(mutex_);
  DDPSCOPE_CHECK(completed_, "Future::value(): not completed yet; call wait()");
  if (error_) std::rethrow_exception(error_);
  return value_;
}

std::exception_ptr Future::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void Future::add_done_callback(std::function<void(Future&)> fn) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!completed_) {
    callbacks_.push_back(std::move(fn));
    return;
  }
  lock.unlock();
  fn(*this);
}

std::shared_ptr<Future> Future::then(Callback callback) {
  auto next = std::make_shared<Future>();
  add_done_callback([next, cb = std::move(callback)](Future& f) {
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

}  // namespace ddpscope::c10d
