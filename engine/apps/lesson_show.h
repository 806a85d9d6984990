// `ddpscope-cli lesson show LESSON [--step K] [--json]` and `lesson list`: what a lesson's
// steps show, without a window. The lessons live with the app (gui/, above the engine),
// so these run ddpscope-lesson, built with the app and installed beside the CLI.
#pragma once

#include <functional>

namespace CLI {
class App;  // CLI11's, included by the .cpp files that add options (compiling it is costly)
}  // namespace CLI

namespace ddpscope::apps {

// Adds `show` and `list` under `lesson`; the returned function runs whichever was parsed
// (and returns -1 when neither was).
std::function<int()> add_lesson_show_commands(CLI::App& lesson);

}  // namespace ddpscope::apps
