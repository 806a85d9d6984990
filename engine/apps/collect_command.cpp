#include "collect_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstring>
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <sys/wait.h>

#include "collector.h"
#include "collector_process.h"
#include "collector_protocol.h"
#include "ddpscope/error.h"
#include "ddpscope/host_port.h"
#include "ddpscope/plural.h"
#include "ddpscope/random_token.h"
#include "run_file_claim.h"
#include "torchrun_launch.h"
#include "worker_protocol.h"

namespace ddpscope::apps {
namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t g_stop = 0;
void on_stop(int sig) { g_stop = sig; }

// A value as a POSIX shell reads it back: in single quotes, each quote closed and escaped.
std::string shell_quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A value as it is printed for the shell: PYTHONPATH in double quotes, so that the job's
// own PYTHONPATH expands after ours (and adds nothing when it is unset or empty: an empty
// entry would put the current folder on the job's path); the others in single quotes.
std::string printed_value(const std::string& name, const std::string& value) {
  return name == "PYTHONPATH" ? "\"" + value + "\"" : shell_quoted(value);
}

// "ranks: 2 joined, 1 ended" as it changes; `seen` and `ended`: how many were said. `json`:
// also as a line the app reads.
void say_ranks(const probes::Collector& c, size_t& seen, size_t& ended, bool json) {
  if (c.ranks_seen().size() == seen && c.ranks_ended().size() == ended) return;
  std::printf("ranks: %zu joined, %zu ended\n", c.ranks_seen().size(), c.ranks_ended().size());
  if (json)
    job_events::write_event(stdout, job_events::Ranks{static_cast<int64_t>(c.ranks_seen().size()),
                                                      static_cast<int64_t>(c.ranks_ended().size())});
  std::fflush(stdout);
  seen = c.ranks_seen().size();
  ended = c.ranks_ended().size();
}

// The run's message when expected ranks never came or never ended ("" when all did).
std::string missing_ranks(const probes::Collector& c, int expect) {
  std::vector<int> never, unfinished;
  for (int r = 0; r < expect; ++r) {
    if (!c.ranks_seen().count(r))
      never.push_back(r);
    else if (!c.ranks_ended().count(r))
      unfinished.push_back(r);
  }
  const auto named = [](const std::vector<int>& ranks) {
    std::string list;
    for (int r : ranks)
      list += (list.empty() ? "" : ", ") + std::to_string(r);
    return ranks_named(ranks.size(), list);
  };
  std::string out;
  if (!never.empty()) out = named(never) + " never came";
  if (!unfinished.empty()) out += (out.empty() ? "" : "; ") + named(unfinished) + " never ended";
  return out.empty() ? out : "expected " + std::to_string(expect) + " ranks; " + out;
}

// `ddpscope --follow RUN`, left running when the collection ends (the window keeps the
// run); a warning, never an error, when it cannot start: the collection goes on.
// Returns the app's pid (0: not started), for the caller to reap once it is closed.
pid_t open_app_on(const std::string& run) {
  const std::string app = find_desktop_app();
  if (app.empty()) {
    std::fprintf(stderr,
                 "warning: --follow: the desktop app (ddpscope) is not beside ddpscope-cli nor on PATH; set "
                 "DDPSCOPE_APP, or open %s in it yourself\n",
                 run.c_str());
    return 0;
  }
  if (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY") && !std::getenv("QT_QPA_PLATFORM")) {
    std::fprintf(stderr,
                 "warning: --follow: no display (DISPLAY is not set); open %s in the app on a machine "
                 "with one\n",
                 run.c_str());
    return 0;
  }
  std::vector<std::string> args = {app, "--follow", run};
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // its own group: Ctrl-C here does not close it
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int failed = posix_spawn(&pid, app.c_str(), nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (failed) {
    std::fprintf(stderr, "warning: --follow: could not start %s: %s\n", app.c_str(), std::strerror(failed));
    return 0;
  }
  std::printf("Opened the app on the run (pid %d)\n", static_cast<int>(pid));
  return pid;
}

}  // namespace

std::string find_desktop_app() {
  if (const char* env = std::getenv("DDPSCOPE_APP"); env && *env) return env;
  std::error_code ec;
  const fs::path sibling = fs::read_symlink("/proc/self/exe", ec).parent_path() / "ddpscope";
  if (!ec && fs::is_regular_file(sibling)) return sibling.string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t begin = 0; begin <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', begin), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(begin, end - begin)) / "ddpscope";
    if (end > begin && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    begin = end + 1;
  }
  return {};
}

std::pair<std::string, int> parse_listen(const std::string& listen) {
  DDPSCOPE_CHECK(!listen.empty(), "--listen is empty; give HOST or HOST:PORT (e.g. 10.0.0.5:29600)");
  HostPort where;
  const std::string wrong = split_host_port(listen, where);
  DDPSCOPE_CHECK(wrong.empty(), "--listen '", listen, "': ", wrong, "; give HOST or HOST:PORT (IPv6 in brackets)");
  if (where.port.empty()) return {where.host, 0};
  const int port = port_number(where.port, 1, 65534);
  DDPSCOPE_CHECK(port > 0, "--listen '", listen, "': the port '", where.port,
                 "' must be a number from 1 to 65534 (the collector uses it and the next)");
  return {where.host, port};
}

std::vector<std::pair<std::string, std::string>> job_environment(const std::string& batch_endpoint,
                                                                 const std::string& clock_endpoint,
                                                                 const std::string& token, bool measure_links) {
  std::vector<std::pair<std::string, std::string>> env = {
      {probes::kCollectorEnv, batch_endpoint},
      {probes::kCollectorClockEnv, clock_endpoint},
      {probes::kRunTokenEnv, token},
      {"PYTHONPATH", torchrun_python_package() + "${PYTHONPATH:+:${PYTHONPATH}}"},
      {"DDPSCOPE_PROBES_LIB", torchrun_probes_library()}};
  if (measure_links) env.emplace_back("DDPSCOPE_MEASURE_LINKS", "1");
  return env;
}

int run_collect(const CollectOptions& options) {
  const auto [host, port] = parse_listen(options.listen);
  const auto claim = probes::claim_run_file(options.out, options.force);
  const std::string token = random_token();
  probes::Collector collector({.run_file = claim->path(),
                               .token = token,
                               .run = {.config_json = R"({"job":"collect"})",
                                       .world_size = std::max(1, options.expect),
                                       .backend = "torch",
                                       .model = "torch script"},
                               .bind_host = host,
                               .port = port});
  const auto env =
      job_environment(collector.batch_endpoint(), collector.clock_endpoint(), token, options.measure_links);
  std::printf("Collecting into %s\n\nIn the shell that starts the job:\n", claim->path().c_str());
  for (const auto& [name, value] : env)
    std::printf("  export %s=%s\n", name.c_str(), printed_value(name, value).c_str());
  std::string prefix = "env";
  for (const auto& [name, value] : env)
    prefix += " " + name + "=" + printed_value(name, value);
  std::printf("\nOr before the launcher's command (torchrun, srun, mpirun):\n  %s\n\n", prefix.c_str());
  const bool json = options.progress == "json";
  if (json) {
    std::vector<std::string> exports;
    for (const auto& [name, value] : env)
      exports.push_back("export " + name + "=" + printed_value(name, value));
    job_events::write_event(stdout, job_events::Collect{claim->path(), exports, prefix});
  }
  // A program reading --progress json (the app) stops the collector its own way: no Ctrl-C.
  if (options.expect > 0)
    std::printf("Waiting for %d ranks to end%s: the run file is then complete.\n", options.expect,
                json ? "" : " (or Ctrl-C)");
  else if (json)
    std::printf("Waiting for the job: stop collecting once it has ended; the run file is then complete.\n");
  else
    std::printf("Ctrl-C when the job has ended: the run file is then complete.\n");
  std::fflush(stdout);
  pid_t app = options.follow ? open_app_on(claim->path()) : 0;
  std::fflush(stdout);
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  size_t seen = 0, ended = 0;
  const auto expected_ended = [&] {
    return options.expect > 0 && collector.ranks_ended().size() >= static_cast<size_t>(options.expect);
  };
  while (!g_stop && !expected_ended()) {
    try {
      collector.poll(std::chrono::milliseconds(100));
    } catch (const std::exception&) {
      if (!g_stop) throw;  // the signal interrupted the wait (EINTR): stop as asked
    }
    say_ranks(collector, seen, ended, json);
    if (app > 0 && waitpid(app, nullptr, WNOHANG) == app) app = 0;  // the window was closed: reaped
  }
  // A second Ctrl-C (or the launcher's SIGTERM after ours) must not cut the last batches
  // short: they are stored before we go.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  std::printf("Storing what the ranks still send...\n");
  std::fflush(stdout);
  collector.drain();
  say_ranks(collector, seen, ended, json);
  collector.finish("finished", missing_ranks(collector, options.expect));
  std::printf("Stored %llu batches in %s (%llu refused: wrong token or damaged)\n",
              static_cast<unsigned long long>(collector.batches()), claim->path().c_str(),
              static_cast<unsigned long long>(collector.rejected()));
  if (const std::string missing = missing_ranks(collector, options.expect); !missing.empty())
    std::printf("%s\n", missing.c_str());
  return 0;
}

std::function<int()> add_collect_command(CLI::App& app, CLI::App** collect) {
  auto options = std::make_shared<CollectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "collect", "Collect a run from a job another launcher starts (torchrun, srun, mpirun): prints what to add");
  cmd->add_option("--out", options->out, "Run file to write (default: a new one in the workspace)");
  cmd->add_flag("--force", options->force, "Replace the run an existing --out holds");
  cmd->add_option("--listen", options->listen,
                  "HOST or HOST:PORT the job's ranks reach (PORT and PORT+1 are used; default 127.0.0.1 and "
                  "ports the system chooses)")
      ->capture_default_str();
  cmd->add_option("--expect", options->expect, "Stop once this many ranks have ended (default: at Ctrl-C)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--progress", options->progress, "Output: lines, or json (also @ddpscope {json} lines, for the app)")
      ->check(CLI::IsMember({"lines", "json"}))
      ->capture_default_str();
  cmd->add_flag("--measure-links", options->measure_links,
                "The job times each pair of neighbouring ranks and of hosts after init_process_group (the links' "
                "ceiling, ddpscope-cli links)");
  cmd->add_flag("--follow", options->follow, "Open the desktop app on the run, following it live as ranks join");
  *collect = cmd;
  return [options] { return run_collect(*options); };
}

}  // namespace ddpscope::apps
