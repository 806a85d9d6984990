#pragma once
// The median of a sample of timings (the upper middle when the count is even; 0 when empty):
// the typical figure the tools print for repeated runs, robust to the one slow repeat a
// shared machine adds.
#include <algorithm>
#include <vector>

namespace ddpscope {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace ddpscope
