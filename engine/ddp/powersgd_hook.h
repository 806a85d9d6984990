// PowerSGD gradient compression as a DDP comm hook (Vogels et al., 2019, as PyTorch's
// powerSGD_hook): each gradient matrix M (n x m) is sent as two thin factors,
// P = M Q (n x r) and Q = M^T P (m x r), r << min(n, m), with one power-iteration step
// per iteration. What the approximation misses is kept as an error and added back to
// the next gradient (error feedback); Q is kept between iterations (warm start).
// Vectors and matrices too small to gain are allreduced as they are, and so is every
// bucket before start_iteration.
#pragma once

#include <map>
#include <memory>

#include "comm_hook.h"

namespace ddpscope::ddp {

struct PowerSgdOptions {
  int rank = 1;                  // rank of the approximation
  int64_t start_iteration = 10;  // plain allreduce before this iteration
  bool error_feedback = true;
  bool warm_start = true;
  uint64_t seed = 0;  // Q's initialisation, the same on every rank
};

class PowerSgdState {
 public:
  PowerSgdState(std::shared_ptr<c10d::ProcessGroup> group, PowerSgdOptions options)
      : group_(std::move(group)), options_(options) {}
  // Elements sent so far, and what plain allreduce would have sent.
  int64_t elements_sent() const { return sent_; }
  int64_t elements_uncompressed() const { return uncompressed_; }
  int64_t iteration() const { return iteration_; }

 private:
  friend CommHook powersgd_hook(std::shared_ptr<PowerSgdState> state);
  std::shared_ptr<c10d::Future> reduce(GradBucket& bucket);

  std::shared_ptr<c10d::ProcessGroup> group_;
  PowerSgdOptions options_;
  int64_t iteration_ = 0;
  int64_t sent_ = 0, uncompressed_ = 0;
  std::map<const TensorImpl*, Tensor> errors_;  // per parameter
  std::map<const TensorImpl*, Tensor> qs_;      // per parameter, m x r
};

CommHook powersgd_hook(std::shared_ptr<PowerSgdState> state);

}  // namespace ddpscope::ddp
