// ddpscope-worker's global operator new counts allocations (allocation_counter.h), so
// rpc-ping can report allocations per call. One relaxed atomic add per allocation.
#include <cstdlib>
#include <new>

#include "allocation_counter.h"

void* operator new(std::size_t n) {
  ddpscope::apps::count_allocation();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
