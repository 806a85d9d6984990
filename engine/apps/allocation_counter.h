// Counts this process's C++ heap allocations (operator new), for benchmarks that report
// allocations per call. The counting operator new is linked into ddpscope-worker only.
#pragma once

#include <cstdint>

namespace ddpscope::apps {
// Allocations so far; zero where the counting operator new is not linked in.
uint64_t allocations();
void count_allocation();
}  // namespace ddpscope::apps
