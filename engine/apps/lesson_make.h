// `ddpscope-cli lesson make RUN`: a lesson file (probes/formats/lesson_file.h) from a run of the
// teacher's own: what it replays (a distributed autograd pass, or a rank's DDP iterations,
// found in the run), its title and words, the steps where Play stops and the teacher's
// narration of steps. Written beside the run unless --out says where; the run is named
// relative to the lesson file, so the folder can be shared whole.
#pragma once

#include <functional>

namespace CLI {
class App;  // CLI11's, included by the .cpp files that add options (compiling it is costly)
}  // namespace CLI

namespace ddpscope::apps {

// Adds `lesson` (with its `make` subcommand) to `app`; the returned function runs it once
// parsed and returns the exit status.
std::function<int()> add_lesson_command(CLI::App& app, CLI::App** lesson);

}  // namespace ddpscope::apps
