// Where a native process's code stands: every thread's stack, captured in-process and
// symbolized, for a rank of our engine that has stopped making progress (the
// PyTorch ranks' Python stacks come from probes/python/ddpscope/_stacks.py).
//
// Capture: each thread is sent a real-time signal whose handler records the return
// addresses with GCC's unwinder (_Unwind_Backtrace, the one C++ exceptions use), while the
// capturing thread waits for it; a thread that does not answer in time is listed without
// frames. Symbols: elfutils' libdwfl over this process's mapped files (function names from
// the symbol tables, demangled; file and line where DWARF line tables exist), as debuggers
// and profilers on Linux read them; no frame walking of our own. Not libunwind: its
// libunwind.so.8 exports _Unwind_RaiseException too, and in a PyTorch rank that loaded it
// the C++ exceptions of gloo's timeout went through it and aborted the process.
//
//   const nlohmann::json threads = native_stacks_json(capture_native_stacks({}));
//
// Not for the training path: a capture takes a few milliseconds per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddpscope::probes {

struct NativeFrame {
  std::string function;  // demangled; "??" when no symbol covers the address
  std::string file;      // source file where line tables say, else the module's path
  int64_t line = 0;      // 0: not known
};

struct NativeThreadStack {
  int64_t tid = 0;
  std::string name;                 // the thread's name (/proc/self/task/TID/comm)
  std::vector<NativeFrame> frames;  // innermost first
  int64_t omitted = 0;              // outer frames left out past the limit
  bool answered = true;             // false: it never ran the handler (blocked the signal?)
};

struct NativeStackLimits {
  size_t max_threads = 32;
  size_t max_frames = 48;
  int answer_ms = 200;  // how long each thread has to answer
};

// Every thread of this process but the caller's and those of `skip`, the main thread first.
std::vector<NativeThreadStack> capture_native_stacks(const NativeStackLimits& limits,
                                                     const std::vector<int64_t>& skip = {});

// The capture as a stacks record's "threads" (docs/run-files.md: the same form as a Python
// rank's): [{"thread", "name", "frames": [{"file", "line", "function", "code"}], "omitted"}].
std::string native_stacks_json(const std::vector<NativeThreadStack>& threads);

}  // namespace ddpscope::probes
