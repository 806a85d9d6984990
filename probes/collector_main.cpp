// ddpscope-collector: the job's event collector, started by the launcher before the
// ranks. It writes the run file and prints one line with its endpoints:
//   @ddpscope {"event":"collector","batch":"tcp://...","clock":"tcp://..."}
// The run's token comes from DDPSCOPE_RUN_TOKEN (kept off the command line). The
// launcher reports the job's end as one JSON line on stdin
//   {"status":"failed","message":"...","failed_rank":1}
// after which the collector stores what is still arriving and exits. If stdin closes
// without that line, the launcher is gone and the run is marked failed. Before that,
// {"request":"graph"} asks every rank for its next iteration's autograd graph.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "collector.h"
#include "collector_protocol.h"

namespace {
volatile sig_atomic_t g_stop_signal = 0;
void on_signal(int sig) {
  g_stop_signal = sig;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace ddpscope::probes;
  CLI::App app{"ddpscope-collector: receives a job's probe events and writes its run file"};
  CollectorOptions o;
  app.add_option("--out", o.run_file, "Run file to write")->required();
  app.add_option("--bind", o.bind_host, "Address ranks reach the collector on")
      ->default_val("127.0.0.1");
  app.add_option("--world-size", o.run.world_size, "Ranks in the job")->default_val(1);
  app.add_option("--backend", o.run.backend, "Process-group backend of the job");
  app.add_option("--model", o.run.model, "Model the job trains");
  app.add_option("--config", o.run.config_json, "The job's options as JSON")->default_val("{}");
  CLI11_PARSE(app, argc, argv);
  if (const char* token = std::getenv(kRunTokenEnv)) o.token = token;
  if (o.token.empty()) {
    std::fprintf(stderr, "error: %s is not set; the collector is started by ddpscope-cli train\n",
                 kRunTokenEnv);
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGINT, SIG_IGN);  // Ctrl-C is the launcher's to handle; it tells us the outcome
  signal(SIGPIPE, SIG_IGN);
  try {
    Collector collector(o);
    std::printf("@ddpscope %s\n", nlohmann::json{{"event", "collector"},
                                                 {"batch", collector.batch_endpoint()},
                                                 {"clock", collector.clock_endpoint()}}
                                      .dump()
                                      .c_str());
    std::fflush(stdout);
    std::string input;
    nlohmann::json outcome;
    bool stdin_open = true;
    while (stdin_open && outcome.is_null() && !g_stop_signal) {
      bool ready = false;
      collector.poll(std::chrono::milliseconds(100), STDIN_FILENO, &ready);
      if (!ready) continue;
      char buf[4096];
      const ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
      if (n <= 0) {
        stdin_open = false;
        break;
      }
      input.append(buf, static_cast<size_t>(n));
      for (auto nl = input.find('\n'); nl != std::string::npos && outcome.is_null();
           nl = input.find('\n')) {
        nlohmann::json line;
        try {
          line = nlohmann::json::parse(input.substr(0, nl));
        } catch (const nlohmann::json::exception&) {
          line = {{"status", "failed"}, {"message", "the launcher sent an unreadable outcome"}};
        }
        input.erase(0, nl + 1);
        if (line.value("request", "") == "graph") {
          collector.request_graph();
        } else {
          outcome = line;
        }
      }
    }
    collector.drain();
    if (g_stop_signal) {
      collector.finish("stopped", "the collector was stopped by a signal");
    } else if (outcome.is_null()) {
      collector.finish("failed", "the launcher ended without reporting the job's result");
    } else {
      collector.finish(outcome.value("status", "finished"), outcome.value("message", ""),
                       outcome.value("failed_rank", -1));
    }
    std::fprintf(stderr, "[ddpscope] collector: %llu batches, %lld events, %llu rejected\n",
                 static_cast<unsigned long long>(collector.batches()),
                 static_cast<long long>(collector.writer().events_written()),
                 static_cast<unsigned long long>(collector.rejected()));
  } catch (const ddpscope::Error& e) {
    std::fprintf(stderr, "error: collector: %s\n", e.message().c_str());
    return 1;
  }
  return 0;
}
