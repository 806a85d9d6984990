// Future: the result of an asynchronous communication, a list of tensors or an error.
// Callbacks chained with then() run when it completes (on the completing thread, or at
// once if it already has), which is how DDP comm hooks post-process a reduced bucket.
//
//   auto fut = group->allreduce(t)->get_future();
//   auto avg = fut->then([n](Future& f) { return scaled(f.value(), 1.0 / n); });
//   avg->wait();
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "tensor/tensor.h"

namespace ddpscope::c10d {

class Future : public std::enable_shared_from_this<Future> {
 public:
  void mark_completed(std::vector<Tensor> value);
  void set_error(std::exception_ptr error);

  bool completed() const;
  // Blocks until completion; rethrows the error if there is one.
  const std::vector<Tensor>& wait();
  // The value; throws if not completed or failed.
  const std::vector<Tensor>& value() const;
  std::exception_ptr error() const;

  // Runs `callback` on completion; its result (or exception) completes the new future.
  using Callback = std::function<std::vector<Tensor>(Future&)>;
  std::shared_ptr<Future> then(Callback callback);
  // Runs `fn` on completion, for side effects.
  void add_done_callback(std::function<void(Future&)> fn);

 private:
  void finish(std::unique_lock<std::mutex>& lock);

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool completed_ = false;
  std::vector<Tensor> value_;
  std::exception_ptr error_;
  std::vector<std::function<void(Future&)>> callbacks_;
};

}  // namespace ddpscope::c10d
