// printf's formatting into a std::string, for the CLI's tables and sentences (lines of a
// few hundred characters; longer output is cut at 1 KiB).
#pragma once

#include <cstdio>
#include <string>

namespace ddpscope {

template <typename... Args>
std::string printf_string(const char* fmt, Args... args) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace ddpscope
