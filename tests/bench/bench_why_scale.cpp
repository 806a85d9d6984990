// The cause analysis (slow_cause.h, `ddpscope-cli why`) at a thousand ranks: a synthetic run
// of 1,024 ranks x 100 iterations (tests/unit/slow_cause_run.h: every rank's phases, four
// gradients, two bucket allreduces each iteration, each part up to 0.2 ms longer at random;
// rank 517 slower by 5 ms in one layer's gradient), analysed whole. Beside it, in the same
// run, the overlap analysis `stats` makes of the same file (analyze_run), the baseline every
// view already pays. Prints one JSON object: seconds and peak memory of each, the ratio, and
// whether the verdict named rank 517, backward and its layer. Targets: 2 s and 1 GiB.
//
//   build/tests/bench/bench_why_scale [ranks] [iterations]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "overlap_analysis.h"
#include "process_figures.h"
#include "slow_cause.h"
#include "slow_cause_run.h"

using namespace ddpscope;

using bench::peak_mib;
using bench::seconds_since;

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 100;
  const int slow = ranks / 2 + 5 < ranks ? ranks / 2 + 5 : ranks - 1;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("bench_why_scale_" + std::to_string(getpid()) + ".ddprun")).string();
  // Written by a child, so that this process's peak memory is the analysis' alone.
  auto t0 = std::chrono::steady_clock::now();
  const pid_t writer = fork();
  if (writer == 0) {
    testing::write_slow_run(path, {.ranks = ranks,
                                   .iterations = iterations,
                                   .slow_rank = slow,
                                   .phase = "backward",
                                   .layer = 1,
                                   .slow_ms = 5,
                                   .jitter_ns = 200'000});
    _exit(0);
  }
  int status = 0;
  if (writer < 0 || waitpid(writer, &status, 0) != writer || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_why_scale: writing the run failed\n");
    return 2;
  }
  const double write_s = seconds_since(t0);
  const double before_mib = peak_mib();

  t0 = std::chrono::steady_clock::now();
  probes::SlowCause cause;
  {
    probes::RunStoreReader run(path);
    cause = probes::analyze_slow_cause(run);
  }
  const double why_s = seconds_since(t0);
  const double why_mib = peak_mib();

  t0 = std::chrono::steady_clock::now();
  size_t rows = 0;
  {
    probes::RunStoreReader run(path);
    rows = probes::analyze_run(run).iterations.size();
  }
  const double stats_s = seconds_since(t0);
  std::filesystem::remove(path);

  const bool named =
      cause.straggler.rank == slow && cause.straggler.phase == "backward" && cause.straggler.where == "module.layers.2";
  nlohmann::ordered_json out = {
      {"ranks", ranks},
      {"iterations", iterations},
      {"write_s", write_s},
      {"why_s", why_s},
      {"why_peak_mib", why_mib},
      {"peak_mib_before_analysis", before_mib},
      {"stats_analysis_s", stats_s},
      {"stats_rows", rows},
      {"why_over_stats", stats_s > 0 ? why_s / stats_s : 0},
      {"named_the_slow_rank_phase_and_layer", named},
      {"verdict_rank", cause.straggler.rank},
      {"targets", "why_s <= 2, why_peak_mib <= 1024"},
  };
  std::printf("%s\n", out.dump(2).c_str());
  return named ? 0 : 1;
}
