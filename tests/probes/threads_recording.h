// Events recorded on threads of their own for the shipping tests, with probes on.
#pragma once

#include <thread>

#include "probe.h"

namespace ddpscope::probes::threads_recording {

// Records `n` marks on a thread of its own, named `name`.
inline void recordOn(const char* name, int n) {
  std::thread([=] {
    set_thread_name(name);
    for (int i = 0; i < n; ++i)
      DDPSCOPE_INSTANT(Kind::Mark, "tick");
  }).join();
}

// Probes on for one test.
struct ProbesOn {
  ProbesOn() { set_enabled(true); }
  ~ProbesOn() { set_enabled(false); }
};

}  // namespace ddpscope::probes::threads_recording
