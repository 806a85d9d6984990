// Counts in words: "1 iteration", "3 iterations", never "3 iteration(s)". The project's
// user-facing text is English; a word whose plural is not its singular plus "s" passes
// its plural.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ddpscope {

inline std::string count_of(int64_t n, std::string_view one, std::string_view many = {}) {
  std::string out = std::to_string(n) + " ";
  if (n == 1) return out.append(one);
  if (many.empty()) return out.append(one).append("s");
  return out.append(many);
}

// "rank 3" or "ranks 1, 2": `list` is the numbers already written out.
inline std::string ranks_named(size_t count, std::string_view list) {
  return std::string(count == 1 ? "rank " : "ranks ").append(list);
}

}  // namespace ddpscope
