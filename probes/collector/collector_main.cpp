// ddpscope-collector: the job's event collector, started by the launcher before the
// ranks. It writes the run file and prints one line with its endpoints:
//   @ddpscope {"event":"collector","batch":"tcp://...","clock":"tcp://..."}
// The run's token comes from DDPSCOPE_RUN_TOKEN (kept off the command line). The
// launcher reports the job's end as one JSON line on stdin (launcher_outcome.h), after
// which the collector stores what is still arriving and exits. If stdin closes without
// that line, the launcher is gone and the run is marked failed. Before that,
// {"request":"graph"} asks every rank for its next iteration's autograd graph.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <nlohmann/json.hpp>

#include "collector.h"
#include "ddpscope/log.h"
#include "ddpscope/process_state.h"
#include "collector_protocol.h"
#include "job_events.h"
#include "launcher_outcome.h"

namespace {
volatile sig_atomic_t g_stop_signal = 0;
void on_signal(int sig) { g_stop_signal = sig; }

// Whether process `pid` is stopped (SIGSTOP, SIGTSTP, a debugger).
bool is_stopped(pid_t pid) { return ddpscope::is_stopped_state(ddpscope::process_state(pid)); }

// Watches the launcher (our parent): stopped, it stops reading the ranks' progress and
// they block writing it, a stall nothing else reports. Said on stderr (the job's
// terminal) once it lasts 2 s, and in the run's final message.
class LauncherWatch {
 public:
  void poll() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check_ < std::chrono::milliseconds(250)) return;
    last_check_ = now;
    const bool stopped = is_stopped(getppid());
    if (stopped && !stopped_since_) stopped_since_ = now;
    if (!stopped && stopped_since_) {
      total_ += now - *stopped_since_;
      stopped_since_.reset();
      warned_ = false;
      ddpscope::log::info("collector: the launcher runs again");
    }
    if (stopped_since_ && !warned_ && now - *stopped_since_ >= std::chrono::seconds(2)) {
      warned_ = true;
      ++times_;
      ddpscope::log::warn(
          "collector: the launcher (pid {0}) is stopped: the ranks block writing their progress into it, so "
          "the job stalls. Continue it with: kill -CONT {0}",
          static_cast<int>(getppid()));
    }
  }
  // For the run's message: "" when it never stopped for long.
  std::string summary() const {
    if (times_ == 0) return {};
    return "the launcher was stopped for " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(total_).count()) +
           " s (the ranks stalled meanwhile)";
  }

 private:
  std::chrono::steady_clock::time_point last_check_{};
  std::optional<std::chrono::steady_clock::time_point> stopped_since_;
  std::chrono::steady_clock::duration total_{};
  bool warned_ = false;
  int times_ = 0;
};

// The ranks' processes as the launcher saw them before it ended the job ({"1": "T", ...} in
// its outcome line): kept in the run, so that a rank stopped or gone then is still said not
// to have answered once the job is over. What cannot be stored is only warned about.
void record_rank_end_states(ddpscope::probes::Collector& collector, const std::map<int, std::string>& states) {
  if (states.empty()) return;
  try {
    collector.writer().set_rank_end_states(states);
  } catch (const ddpscope::Error& e) {
    ddpscope::log::warn("collector: could not record the ranks' processes at the job's end: {}", e.message());
  }
}
}  // namespace

int main(int argc, char** argv) {
  using namespace ddpscope::probes;
  CLI::App app{"ddpscope-collector: receives a job's probe events and writes its run file"};
  CollectorOptions o;
  app.add_option("--out", o.run_file, "Run file to write")->required();
  app.add_option("--bind", o.bind_host, "Address ranks reach the collector on")->default_val("127.0.0.1");
  app.add_option("--world-size", o.run.world_size, "Ranks in the job")->default_val(1);
  app.add_option("--backend", o.run.backend, "Process-group backend of the job");
  app.add_option("--model", o.run.model, "Model the job trains");
  app.add_option("--config", o.run.config_json, "The job's options as JSON")->default_val("{}");
  CLI11_PARSE(app, argc, argv);
  if (const char* token = std::getenv(kRunTokenEnv)) o.token = token;
  if (o.token.empty()) {
    ddpscope::log::error("{} is not set; the collector is started by ddpscope-cli train", kRunTokenEnv);
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGINT, SIG_IGN);  // Ctrl-C is the launcher's to handle; it tells us the outcome
  signal(SIGPIPE, SIG_IGN);
  try {
    Collector collector(o);
    job_events::write_event(stdout, job_events::Collector{collector.batch_endpoint(), collector.clock_endpoint()});
    std::string input;
    nlohmann::json outcome;
    bool stdin_open = true;
    LauncherWatch launcher;
    while (stdin_open && outcome.is_null() && !g_stop_signal) {
      bool ready = false;
      collector.poll(std::chrono::milliseconds(100), STDIN_FILENO, &ready);
      launcher.poll();
      if (!ready) continue;
      char buf[4096];
      const ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
      if (n <= 0) {
        stdin_open = false;
        break;
      }
      input.append(buf, static_cast<size_t>(n));
      for (auto nl = input.find('\n'); nl != std::string::npos && outcome.is_null(); nl = input.find('\n')) {
        nlohmann::json line;
        try {
          line = nlohmann::json::parse(input.substr(0, nl));
        } catch (const nlohmann::json::exception&) {
          line = {{"status", "failed"}, {"message", "the launcher sent an unreadable outcome"}};
        }
        input.erase(0, nl + 1);
        const auto request = line.is_object() ? line.find("request") : line.end();
        if (request == line.end()) {
          outcome = line.is_object()
                        ? line
                        : nlohmann::json{{"status", "failed"}, {"message", "the launcher sent an unreadable outcome"}};
        } else if (*request == "graph" || *request == "stacks") {
          *request == "graph" ? collector.request_graph() : collector.request_stacks();
        }
      }
    }
    collector.drain();
    if (g_stop_signal) {
      collector.finish("stopped", "the collector was stopped by a signal");
    } else if (outcome.is_null()) {
      collector.finish("failed", "the launcher ended without reporting the job's result");
    } else {
      LauncherOutcome said = outcome_of(outcome);
      record_rank_end_states(collector, said.rank_states);
      std::string& message = said.end.message;
      if (const std::string s = launcher.summary(); !s.empty()) message += (message.empty() ? "" : "; ") + s;
      collector.finish(said.end);
    }
    ddpscope::log::info("collector: {} batches, {} events, {} rejected", collector.batches(),
                        collector.writer().events_written(), collector.rejected());
  } catch (const ddpscope::Error& e) {
    ddpscope::log::error("collector: {}", e.message());
    return 1;
  }
  return 0;
}
