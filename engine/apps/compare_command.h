// `ddpscope-cli compare A B`: where two runs' iteration time went and the ops that changed
// (run_compare.h), as text or JSON; with --fail-above, a regression gate that exits 1
// when B is slower than A by more than the given percentage.
#pragma once

#include <functional>

namespace CLI {
class App;  // CLI11's, included by the .cpp files that add options (compiling it is costly)
}  // namespace CLI

namespace ddpscope::apps {

// Adds the command to `app`; `*compare` is set to it, and the returned function runs it
// once it was parsed.
std::function<int()> add_compare_command(CLI::App& app, CLI::App** compare);

}  // namespace ddpscope::apps
