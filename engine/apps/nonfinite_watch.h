// NonFiniteWatch: finds the first loss and the first gradient on this rank that is not
// finite (NaN or infinite) and records where: a labelled mark on the timeline ("non-finite
// gradient: fc1.weight"), which `stats`, the app and the progress line report. A job whose
// learning rate is too high shows the iteration, the rank and the parameter at once.
// After the first of each, it stops looking. The trainer reads the gradients only in an
// iteration whose loss is not finite: a pass over them every iteration would cost about
// 2 ms of a 35 ms step (25 MiB of gradients), so a gradient that overflows while the loss
// stays finite is named at the first iteration whose loss follows it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ddpscope::apps {

class NonFiniteWatch {
 public:
  // The loss of `iteration` on this rank; true the first time it is not finite.
  bool check_loss(int64_t iteration, double loss);
  // The gradients after backward (and DDP's reduction); true the first time one is not
  // finite. Undefined gradients are skipped.
  bool check_gradients(int64_t iteration, const std::vector<std::pair<std::string, Tensor>>& params);

  // The first non-finite gradient's parameter (empty until one was found).
  const std::string& gradient_parameter() const { return gradient_parameter_; }

 private:
  bool loss_seen_ = false;
  bool gradient_seen_ = false;
  std::string gradient_parameter_;
};

// True when every element of `t` is finite.
bool all_finite(const Tensor& t);

}  // namespace ddpscope::apps
