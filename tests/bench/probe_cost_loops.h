// Timed loops of one span each, compiled twice: in bench_probe_cost.cpp with probes
// compiled in, and in probe_cost_compiled_out.cpp with DDPSCOPE_PROBES_COMPILED_OUT.
#pragma once

#include <cstdint>

namespace ddpscope::bench {

// Nanoseconds per iteration of `n` iterations that each open and close one span.
double span_loop_ns(int64_t n);
double span_loop_compiled_out_ns(int64_t n);

}  // namespace ddpscope::bench
