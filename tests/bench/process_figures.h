// Wall time and this process's peak memory, as the benchmarks that read runs report them.
#pragma once

#include <sys/resource.h>

#include <chrono>

namespace ddpscope::bench {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The process's peak resident memory so far, MiB (ru_maxrss: KiB on Linux).
inline double peak_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

}  // namespace ddpscope::bench
