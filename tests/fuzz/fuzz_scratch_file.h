// The file a fuzz harness writes each input to, for a reader that takes a path: in /dev/shm,
// named for this process, and removed when the fuzzer ends (libFuzzer returns from its
// driver after -max_total_time or -runs, so static destructors run). Each suite run left
// one file per harness behind before.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

namespace ddpscope::fuzz {

class ScratchFile {
 public:
  ScratchFile(const std::string& name, const std::string& suffix = "")
      : path_("/dev/shm/ddpscope-fuzz-" + name + "-" + std::to_string(getpid()) + suffix) {}
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ddpscope::fuzz
