#include "library_frames.h"

#include <string>

namespace ddpscope::probes {
namespace {

bool mentions(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

bool is_native_library_frame(const StackFrame& f) {
  if (f.file.starts_with("/lib/") || f.file.starts_with("/usr/") || f.file.starts_with("./") ||
      f.file.starts_with("../"))  // the last two: glibc's own sources, as its debug files name them
    return true;
  if (f.name.empty() || f.name.starts_with("??") || f.name.starts_with("std::") || f.name.starts_with("__") ||
      f.name.starts_with("_start") || f.name.starts_with("void std::"))
    return true;
  const size_t engine = f.name.find("ddpscope::");
  return engine != std::string::npos && f.name.compare(engine, 16, "ddpscope::apps::") != 0;
}

}  // namespace

bool is_library_frame(const StackFrame& f, bool native) {
  if (native) return is_native_library_frame(f);
  // Installed packages (torch among them), PyTorch's own tree as its flight records name it
  // ("torch/distributed/distributed_c10d.py"); a user's folder that happens to be called
  // "torch" is the user's.
  return f.file.empty() || f.file.front() == '<' || f.file.starts_with("torch/") ||
         mentions(f.file, "site-packages/") || mentions(f.file, "dist-packages/") || mentions(f.file, "/lib/python3") ||
         mentions(f.file, "/torch/distributed/") || mentions(f.file, "/torch/nn/") || mentions(f.file, "/ddpscope/");
}

}  // namespace ddpscope::probes
