// Which lesson a run holds, by the kinds of lesson_kind.h: the one asked for, else the
// first the run holds (a ring allreduce's steps, a distributed autograd pass, a rank's
// DDP iterations). Shared by the Learn tab and `ddpscope-cli lesson show`.
// Plain data, no Qt.
#pragma once

#include <string>

#include "lesson.h"

namespace ddpscope::gui {

// `kind`: a kind's name (lesson_kind.h) when the caller knows it (a lesson of the menu, a
// lesson file), else "" for the first kind the run holds. Throws probes::RunStoreError
// when the run cannot be read. Empty steps when the run holds no such lesson: `why_none`
// then says why, in words for the user.
Lesson loadRunLesson(probes::RunStoreReader& run, const std::string& kind, int rank, std::string& why_none);

}  // namespace ddpscope::gui
