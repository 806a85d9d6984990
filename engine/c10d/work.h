// Work: the handle of one asynchronous communication op. Backends complete it from
// their own threads; users wait on it (with a timeout) or chain on its future.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "future.h"
#include "types.h"

namespace ddpscope::c10d {

class Work {
 public:
  // `description` names the op for errors: "allreduce #7 f32[1024] (sum) on group 'world'".
  Work(OpType op, uint64_t sequence_number, std::string description, std::vector<Tensor> outputs,
       Milliseconds default_timeout, int rank);

  OpType op_type() const { return op_; }
  // When the backend really began and finished the op (steady clock), for overlap
  // analysis; unset (epoch) until then.
  std::chrono::steady_clock::time_point started_at() const { return started_at_.load(); }
  std::chrono::steady_clock::time_point finished_at() const { return finished_at_.load(); }
  void mark_started() { started_at_ = std::chrono::steady_clock::now(); }
  uint64_t sequence_number() const { return sequence_number_; }
  const std::string& description() const { return description_; }

  bool is_completed() const { return future_->completed(); }
  bool is_success() const { return is_completed() && !future_->error(); }
  std::exception_ptr exception() const { return future_->error(); }
  // Blocks until the op completes and rethrows its error. If `timeout` (default: the
  // group's) passes first, throws an error naming the op, the rank and what it waited for.
  void wait(Milliseconds timeout = kUseGroupTimeout);
  // Completes with the op's output tensors.
  std::shared_ptr<Future> get_future() const { return future_; }

  // For backends.
  void finish();
  void finish_with_error(std::exception_ptr error);
  const std::vector<Tensor>& outputs() const { return outputs_; }

 private:
  OpType op_;
  uint64_t sequence_number_;
  std::string description_;
  std::vector<Tensor> outputs_;
  Milliseconds default_timeout_;
  int rank_;
  std::shared_ptr<Future> future_ = std::make_shared<Future>();
  std::atomic<std::chrono::steady_clock::time_point> started_at_{};
  std::atomic<std::chrono::steady_clock::time_point> finished_at_{};
};

// The error type of failed or timed-out collectives. One that ended a known op says which,
// typed (op_name, sequence_number, timed_out), so that whoever reports it never reads its words.
class CommError : public Error {
 public:
  using Error::Error;
  CommError(const std::string& what, const Work& work, bool timed_out, const char* file, int line)
      : Error(what, file, line),
        op_name_(op_type_name(work.op_type())),
        sequence_number_(static_cast<int64_t>(work.sequence_number())),
        timed_out_(timed_out) {}

  const std::string& op_name() const { return op_name_; }  // "allreduce"; empty: no op known
  int64_t sequence_number() const { return sequence_number_; }
  bool timed_out() const { return timed_out_; }

 private:
  std::string op_name_;
  int64_t sequence_number_ = -1;
  bool timed_out_ = false;
};

}  // namespace ddpscope::c10d
