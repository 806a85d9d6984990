#include "run_workspace.h"

#include <ctime>
#include <filesystem>

#include "ddpscope/error.h"

namespace ddpscope::probes {

namespace fs = std::filesystem;

std::string workspace_folder() {
  fs::path folder;
  if (const char* w = std::getenv("DDPSCOPE_WORKSPACE"); w && *w) {
    folder = w;
  } else if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) {
    folder = fs::path(x) / "ddpscope" / "runs";
  } else {
    const char* home = std::getenv("HOME");
    DDPSCOPE_CHECK(home && *home,
                   "cannot find a workspace folder for runs: HOME is not set; set "
                   "DDPSCOPE_WORKSPACE or pass --out RUN_FILE");
    folder = fs::path(home) / ".local" / "share" / "ddpscope" / "runs";
  }
  std::error_code ec;
  fs::create_directories(folder, ec);
  DDPSCOPE_CHECK(!ec, "cannot create the workspace folder ", folder.string(), ": ", ec.message(),
                 "; set DDPSCOPE_WORKSPACE or pass --out RUN_FILE");
  return folder.string();
}

std::string new_run_path() {
  const fs::path folder = workspace_folder();
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "run-%Y%m%d-%H%M%S", &tm);
  fs::path p = folder / (std::string(stamp) + kRunFileExtension);
  for (int n = 2; fs::exists(p); ++n)
    p = folder / (std::string(stamp) + "-" + std::to_string(n) + kRunFileExtension);
  return p.string();
}

}  // namespace ddpscope::probes
