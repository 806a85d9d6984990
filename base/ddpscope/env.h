// Numeric settings from the environment (DDPSCOPE_*_TIMEOUT_MS, ...), read one way
// everywhere: unset or empty gives the default; anything else must be a whole number in
// range, or it is an error naming the variable, its value and what it must be (never a
// silent 0 as atoi gives for "5s").
#pragma once

#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "ddpscope/error.h"

namespace ddpscope {

inline int64_t env_int(const char* name, int64_t fallback, int64_t min = 0,
                       int64_t max = std::numeric_limits<int64_t>::max()) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  const bool whole = end != v && *end == '\0' && errno == 0;
  DDPSCOPE_CHECK(whole && x >= min && x <= max, name, "='", v, "' is not a whole number from ", min,
                 max == std::numeric_limits<int64_t>::max() ? std::string(" up") : " to " + std::to_string(max),
                 "; set it to one, or unset it for the default (", fallback, ")");
  return x;
}

}  // namespace ddpscope
