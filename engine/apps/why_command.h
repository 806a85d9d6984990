// `ddpscope-cli why RUN`: why the run's iterations are slow, in words (slow_cause.h): the
// rank that gates the job, in which phase, who waits for it, what the iteration would take
// without it; --json for scripts.
#pragma once

#include <functional>

namespace CLI {
class App;  // CLI11's, included by the .cpp files that add options (compiling it is costly)
}  // namespace CLI

namespace ddpscope::apps {

// Adds the command to `app`; `*why` is set to it, and the returned function runs it once it
// was parsed.
std::function<int()> add_why_command(CLI::App& app, CLI::App** why);

}  // namespace ddpscope::apps
