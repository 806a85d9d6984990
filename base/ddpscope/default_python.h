// The Python a PyTorch job runs under when none is named: /usr/bin/python3 when it exists
// (Debian's, with python3-torch: another python3 may come first on PATH), else python3,
// found on PATH when the job starts. The CLI's torchrun and the app's Launch dialog share it.
#pragma once

#include <unistd.h>

#include <string>

namespace ddpscope {

inline std::string default_python() { return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3"; }

}  // namespace ddpscope
