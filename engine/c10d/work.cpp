#include "work.h"

#include <condition_variable>

namespace ddpscope::c10d {

Work::Work(OpType op, uint64_t sequence_number, std::string description, std::vector<Tensor> outputs,
           Milliseconds default_timeout, int rank)
    : op_(op),
      sequence_number_(sequence_number),
      description_(std::move(description)),
      outputs_(std::move(outputs)),
      default_timeout_(default_timeout),
      rank_(rank) {}

void Work::finish() {
  finished_at_ = std::chrono::steady_clock::now();
  future_->mark_completed(outputs_);
}

void Work::finish_with_error(std::exception_ptr error) {
  finished_at_ = std::chrono::steady_clock::now();
  future_->set_error(std::move(error));
}

void Work::wait(Milliseconds timeout) {
  // With the group's timeout, the group's watchdog (which knows when the op actually
  // started) reports first; this wait is the backstop, a little later.
  const Milliseconds limit =
      timeout == kUseGroupTimeout ? default_timeout_ + std::max(Milliseconds(1000), default_timeout_ / 20) : timeout;
  auto done = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
  future_->add_done_callback([done](Future&) {
    std::lock_guard<std::mutex> lock(done->first);
    done->second.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(done->first);
    const bool finished = done->second.wait_for(lock, limit, [&] { return future_->completed(); });
    if (!finished) {
      throw CommError(
          timeout_message(detail::concat("timeout: rank ", rank_, " waited ", limit.count(), " ms for ", description_,
                                         " to complete; a peer has not joined it or is still "
                                         "working (raise the timeout if that is expected)")),
          *this, /*timed_out=*/true, __FILE__, __LINE__);
    }
  }
  future_->wait();  // rethrows the op's error, if any
}

}  // namespace ddpscope::c10d
