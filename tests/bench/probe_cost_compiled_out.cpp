// The span loop with probes compiled out (this file is built with
// DDPSCOPE_PROBES_COMPILED_OUT): what a build with DDPSCOPE_PROBES=OFF pays.
#include <chrono>

#include "probe.h"
#include "probe_cost_loops.h"

namespace ddpscope::bench {

double span_loop_compiled_out_ns(int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    DDPSCOPE_SPAN(span, probes::Kind::Mark, "bench");
    span.args().param = static_cast<int32_t>(i);
    asm volatile("" ::: "memory");  // keep the loop
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(n);
}

}  // namespace ddpscope::bench
