// Where runs live: the workspace folder (DDPSCOPE_WORKSPACE, else
// $XDG_DATA_HOME/ddpscope/runs, else ~/.local/share/ddpscope/runs) and fresh file names
// in it. Shared by the CLI (default --out) and the desktop app (its run list).
#pragma once

#include <string>

namespace ddpscope::probes {

inline constexpr const char* kRunFileExtension = ".ddprun";

// The workspace folder, created if missing. Throws ddpscope::Error if it cannot be.
std::string workspace_folder();
// A path for a new run in the workspace: run-YYYYMMDD-HHMMSS[-N].ddprun.
std::string new_run_path();

}  // namespace ddpscope::probes
