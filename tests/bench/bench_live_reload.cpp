// Live reloads of a growing run: what one reload costs when the app follows a job, at
// several run sizes. Ours: loadRun continuing from the previous load (only the new
// rows of the timeline and the overlap analysis are read; no hang analysis until
// needed). Baseline, in the same run: reading the whole file again each time. The live
// views reload every 250 ms while the previous reload has finished, so the update rate
// is 1000 / max(250, reload ms); the target is at least 2 per second. Prints JSON.
//
//   build/tests/bench/bench_live_reload [max_spans]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_data.h"
#include "synthetic_run.h"

using namespace ddpscope;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t max_spans = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  const std::string path = (std::filesystem::temp_directory_path() / "ddpscope-bench-live.ddprun").string();
  std::filesystem::remove(path);
  probes::RunStoreWriter w(path);
  w.begin_run({R"({"model":"mlp","iters":100000})", 2, "mpi", "mlp"});
  // Between two reloads a 2-rank job adds 250 ms of iterations: 25 at 10 ms each.
  constexpr int kStep = 25;
  int iteration = 0;
  nlohmann::ordered_json sizes = nlohmann::json::array();
  std::shared_ptr<const gui::RunData> previous;
  for (int64_t target = 100'000; target <= max_spans; target *= 2) {
    while (iteration * 2 * bench::kSpansPerRankIteration < target) {
      for (int rank = 0; rank < 2; ++rank)
        bench::write_iterations(w, rank, iteration + 1, iteration + kStep);
      iteration += kStep;
    }
    previous = std::make_shared<const gui::RunData>(gui::loadRun(path));
    std::vector<double> ours, full;
    for (int round = 0; round < 5; ++round) {
      for (int rank = 0; rank < 2; ++rank)
        bench::write_iterations(w, rank, iteration + 1, iteration + kStep);
      iteration += kStep;
      auto t = Clock::now();
      auto next = std::make_shared<const gui::RunData>(gui::loadRun(path, 0, previous.get(), false));
      ours.push_back(ms_since(t));
      t = Clock::now();
      const gui::RunData whole = gui::loadRun(path);
      full.push_back(ms_since(t));
      if (whole.timeline.lanes.size() != next->timeline.lanes.size() ||
          whole.analysis.iterations.size() != next->analysis.iterations.size()) {
        std::fprintf(stderr, "error: the continued load differs from a full one\n");
        return 1;
      }
      previous = next;
    }
    const double o = median(ours), f = median(full);
    sizes.push_back({{"spans", previous->span_count},
                     {"reload_ms", o},
                     {"full_reload_ms", f},
                     {"ratio_ours_over_full", o / f},
                     {"updates_per_s", 1000.0 / std::max(250.0, o)},
                     {"full_updates_per_s", 1000.0 / std::max(250.0, f)}});
  }
  std::printf("%s\n", nlohmann::ordered_json{{"sizes", sizes}}.dump(2).c_str());
  std::filesystem::remove(path);
  return 0;
}
