// Which lesson a run holds: the ring allreduce's when the run recorded ring steps and
// nothing else to replay, a rank's DDP iterations when asked for, else its first
// distributed autograd pass. Shared by the Learn tab and `ddpscope-cli lesson show`.
// Plain data, no Qt.
#pragma once

#include <string>

#include "lesson.h"

namespace ddpscope::gui {

// Throws probes::RunStoreError when the run cannot be read. Empty steps when the run
// holds no such lesson: `why_none` then says why, in words for the user.
Lesson load_run_lesson(probes::RunStoreReader& run, bool ddp, int rank, std::string& why_none);

}  // namespace ddpscope::gui
