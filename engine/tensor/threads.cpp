#include "threads.h"

#include <atomic>

#include "ddpscope/error.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace ddpscope {
namespace {
std::atomic<int> g_threads{1};
}

void set_num_threads(int threads) {
  DDPSCOPE_CHECK(threads >= 1, "set_num_threads: need at least 1 thread, got ", threads);
  g_threads = threads;
  openblas_set_num_threads(threads);
}

int get_num_threads() { return g_threads; }

}  // namespace ddpscope
