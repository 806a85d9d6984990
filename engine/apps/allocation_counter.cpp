#include "allocation_counter.h"

#include <atomic>

namespace ddpscope::apps {
namespace {
std::atomic<uint64_t> g_allocations{0};
}
uint64_t allocations() { return g_allocations.load(std::memory_order_relaxed); }
void count_allocation() { g_allocations.fetch_add(1, std::memory_order_relaxed); }
}  // namespace ddpscope::apps
