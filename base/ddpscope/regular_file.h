// Files a user, a link or a peer names are read only when they are regular files: a
// FIFO never ends (and opening one blocks until a writer comes), nor does a device such
// as /dev/zero, and a symlink counts as what it points to. A size limit, where the kind
// of file has one, keeps a wrong file from filling memory.
//
//   check_regular_file(path, "lesson file", 16 << 20);   // throws Error saying why not
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "ddpscope/error.h"

namespace ddpscope {

// Empty when `path` is a regular file of at most `max_bytes` (-1: any size); else a
// sentence saying what it is instead and what to do.
inline std::string why_not_regular_file(const std::string& path, const std::string& noun, int64_t max_bytes = -1) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "'" + path + "': no such file";
  if (S_ISDIR(st.st_mode)) return "'" + path + "' is a folder, not a " + noun;
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)                         ? "a pipe"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode)                       ? "a socket"
                                                                    : "not a plain file";
    return "'" + path + "' is " + kind + ", not a regular file, and would never end: not a " + noun +
           "; copy it to a file first";
  }
  if (max_bytes >= 0 && st.st_size > max_bytes)
    return "'" + path + "' is " + std::to_string(st.st_size >> 20) + " MiB, more than a " + noun + " can be (" +
           std::to_string(max_bytes >> 20) + " MiB)";
  return {};
}

inline void check_regular_file(const std::string& path, const std::string& noun, int64_t max_bytes = -1) {
  const std::string why = why_not_regular_file(path, noun, max_bytes);
  if (!why.empty()) throw Error(why, __FILE__, __LINE__);
}

}  // namespace ddpscope
