// What one step of a lesson shows, without a window: the state (a ring's blocks and the
// ranks summed in each, a DDP rank's buckets, a distributed pass's dependency counts,
// messages in flight and gradients in the context), the narration and the counters. For
// `ddpscope-cli lesson show` (handouts) and for tests that check every step. Plain data.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lesson.h"

namespace ddpscope::gui {

// "ring", "ddp" or "autograd".
std::string lessonKind(const Lesson& lesson);
// The state once `applied` steps have happened (0: before the first), and the words of
// the last of them.
nlohmann::json lessonStepJson(const Lesson& lesson, size_t applied);
std::string lessonStepText(const Lesson& lesson, size_t applied);

}  // namespace ddpscope::gui
