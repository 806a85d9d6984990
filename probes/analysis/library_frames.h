// Which frames of a stack are libraries' and which the user's own code: the stacks of a
// hang (hang_stacks.h) and the frames PyTorch's flight records keep (flight_words.h) are read
// with the same rule.
#pragma once

#include "flight_records.h"

namespace ddpscope::probes {

// Not where the user's code stands. A Python rank's: Python's own library, an installed
// package (torch, ...), ddpscope's package or the interpreter (<frozen ...>). A native rank's
// (our engine's, `native`): a system library (libc, MPI, BLAS), the C++ library, or the
// engine's machinery, every ddpscope namespace but ddpscope::apps (the training loops).
bool is_library_frame(const StackFrame& frame, bool native = false);

}  // namespace ddpscope::probes
