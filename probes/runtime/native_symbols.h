// Addresses of this process's code to functions, files and lines, with elfutils' libdwfl
// over the process's mapped files (and their separate debug files where installed). Where
// debug information describes inlining, one address gives several frames: each function
// inlined there, innermost first, then the function the address is in, each at its own line
// (the line table alone would give the innermost inlined line, often a standard header's,
// for every one of them).
#pragma once

#include <cstdint>
#include <vector>

#include "native_stacks.h"

typedef struct Dwfl Dwfl;

namespace ddpscope::probes {

class NativeSymbols {
 public:
  NativeSymbols();  // reads the process's maps: build one per capture, after the threads answered
  ~NativeSymbols();
  NativeSymbols(const NativeSymbols&) = delete;
  NativeSymbols& operator=(const NativeSymbols&) = delete;

  // The frames at `address`; `return_address`: it points after a call, so the call itself
  // is looked up. Without a symbol: one frame "??" naming the module, or nothing known.
  std::vector<NativeFrame> frames_at(uintptr_t address, bool return_address) const;

 private:
  Dwfl* dwfl_ = nullptr;
};

}  // namespace ddpscope::probes
