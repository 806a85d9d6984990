#include "blas_kernels.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

extern "C" char* openblas_get_corename(void);

namespace ddpscope {
namespace {
constexpr const char* kGuard = "DDPSCOPE_BLAS_CORE_CHOSEN";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

std::string openblas_core() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string preferred_openblas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv(kGuard)) return "";
  const std::string core = lower(openblas_core());
  // Cores whose kernels in Debian 12's OpenBLAS measured slow on CPUs that can do better.
  const bool slow =
      core == "cooperlake" || core == "prescott" || core == "core2" || core == "nehalem" || core == "unknown";
  if (!slow) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return "SKYLAKEX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "HASWELL";
  return "";
}

void reexec_with_preferred_blas_core(char** argv) {
  const std::string core = preferred_openblas_core();
  if (core.empty()) return;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  setenv(kGuard, core.c_str(), 1);
  execv("/proc/self/exe", argv);
  // execv only returns on failure: carry on with OpenBLAS's own kernels.
}

void forget_preferred_blas_core() {
  const char* chosen = std::getenv(kGuard);
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  if (chosen && set && std::string(chosen) == set) unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kGuard);
}

}  // namespace ddpscope
