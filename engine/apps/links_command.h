// `ddpscope-cli links RUN`: what each pair of ranks and of hosts carried, at what rate, what
// `train --measure-links` measured they can carry, and the slow link when there is one
// (link_matrix.h); --json for scripts.
#pragma once

#include <functional>

namespace CLI {
class App;  // CLI11's, included by the .cpp files that add options (compiling it is costly)
}  // namespace CLI

namespace ddpscope::apps {

// Adds the command to `app`; `*links` is set to it, and the returned function runs it once
// it was parsed.
std::function<int()> add_links_command(CLI::App& app, CLI::App** links);

}  // namespace ddpscope::apps
