#include "nonfinite_watch.h"

#include <cmath>
#include <cstring>

#include "probe.h"
#include "tensor/kernels.h"

namespace ddpscope::apps {

bool all_finite(const Tensor& t) {
  if (t.numel() == 0) return true;
  if (t.device().is_cpu() && t.dtype() == DType::F32 && t.is_contiguous()) {
    // Exponent bits all set: infinity or NaN. An OR over the words vectorises and reads
    // the gradient once at memory speed.
    const auto* words = static_cast<const uint32_t*>(t.raw_data());
    uint32_t bad = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
      bad |= static_cast<uint32_t>((words[i] & 0x7f800000u) == 0x7f800000u);
    return bad == 0;
  }
  // Other dtypes and devices: a sum is non-finite when an element is (a finite tensor
  // whose sum overflows reads as non-finite too, which is as alarming).
  return std::isfinite(kernels::sum(t).item<double>());
}

bool NonFiniteWatch::check_loss(int64_t iteration, double loss) {
  if (loss_seen_ || std::isfinite(loss)) return false;
  loss_seen_ = true;
  DDPSCOPE_INSTANT_DYNAMIC(probes::Kind::Mark, std::string("non-finite loss: ") + (std::isnan(loss) ? "nan" : "inf"),
                           {.iteration = static_cast<int32_t>(iteration)});
  return true;
}

bool NonFiniteWatch::check_gradients(int64_t iteration, const std::vector<std::pair<std::string, Tensor>>& params) {
  if (gradient_seen_) return false;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& grad = params[i].second.grad();
    if (!grad.defined() || all_finite(grad)) continue;
    gradient_seen_ = true;
    gradient_parameter_ = params[i].first;
    DDPSCOPE_INSTANT_DYNAMIC(probes::Kind::Mark, "non-finite gradient: " + gradient_parameter_,
                             {.iteration = static_cast<int32_t>(iteration), .param = static_cast<int32_t>(i)});
    return true;
  }
  return false;
}

}  // namespace ddpscope::apps
