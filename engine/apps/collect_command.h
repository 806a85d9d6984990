// `ddpscope-cli collect`: a collector for a job that another launcher starts (torchrun on
// each node, Slurm's srun, a Kubernetes PyTorchJob, a site's wrapper). It listens, prints
// the environment the job's processes need (as `export` lines and as one prefix for a
// launcher's command line), and stores what the ranks send until every expected rank has
// ended, or Ctrl-C or SIGTERM; the run file is complete either way, and says which
// expected ranks never came or never ended.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace ddpscope::apps {

struct CollectOptions {
  std::string out;                   // the run file (empty: a new one in the workspace)
  bool force = false;                // replace the run an existing --out holds
  std::string listen = "127.0.0.1";  // HOST or HOST:PORT the ranks reach; PORT and PORT+1 are used
  int expect = 0;                    // stop once this many ranks have ended (0: at Ctrl-C only)
  std::string progress = "lines";    // lines | json (also "@ddpscope {json}" lines, for the app)
  bool follow = false;               // open the app on the run once the collector listens
  bool measure_links = false;        // the job times its links after init_process_group
};

// The desktop app that --follow starts: $DDPSCOPE_APP, else `ddpscope` beside this
// program, else on PATH; empty when there is none.
std::string find_desktop_app();

// The host and port of "HOST[:PORT]" ("[::1]:7000" for IPv6); port 0 when none is given.
// Throws ddpscope::Error naming what is wrong.
std::pair<std::string, int> parse_listen(const std::string& listen);

// What a job's processes need to record into the collector: each variable and its value,
// in the order they are printed. `measure_links`: the job times its links after
// init_process_group (DDPSCOPE_MEASURE_LINKS=1).
std::vector<std::pair<std::string, std::string>> job_environment(const std::string& batch_endpoint,
                                                                 const std::string& clock_endpoint,
                                                                 const std::string& token, bool measure_links = false);

// Runs the collector until the expected ranks ended, or SIGINT or SIGTERM; returns the
// exit status.
int run_collect(const CollectOptions& options);

// Adds `collect` to `app`; the returned function runs it once parsed.
std::function<int()> add_collect_command(CLI::App& app, CLI::App** collect);

}  // namespace ddpscope::apps
