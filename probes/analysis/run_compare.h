// Two runs (or two iteration ranges) side by side: where each one's iteration time went
// (time_breakdown.h's parts, the mean over ranks and iterations) and the ops that
// appeared, disappeared, got slower or faster, by their total time per rank and iteration
// (as HTA's trace diff compares ops). `ddpscope-cli compare` prints it; the app's Compare
// page draws it.
//
//   RunStoreReader a("before.ddprun"), b("after.ddprun");
//   RunComparison c = compare_runs(a, b);
//   for (const OpChange& op : c.ops) ...   // largest change first
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "event.h"
#include "overlap_analysis.h"
#include "run_settings_diff.h"
#include "run_store_reader.h"

namespace ddpscope::probes {

// Iterations [first, last] by their numbers; first -1: every iteration but the first
// (warm-up) when there are more than two; last -1: up to the last finished one.
struct IterationRange {
  int64_t first = -1, last = -1;
};

// One side: what was compared and its mean parts (ms per rank and iteration).
struct CompareSide {
  std::string path;
  int ranks = 0;
  int64_t first_iteration = -1, last_iteration = -1;  // the range used (-1: no iteration finished)
  int64_t iterations = 0;
  double iteration_ms = 0, forward_ms = 0, backward_ms = 0, exposed_comm_ms = 0, optimizer_ms = 0, idle_ms = 0,
         hidden_comm_ms = 0;
  // Of exposed_comm_ms, waiting for other ranks to arrive rather than moving data (0 where no
  // rank had another to wait for).
  double exposed_wait_ms = 0;
  // GPU truth first (time_breakdown.h): a run with kernels splits into GPU computation,
  // exposed NCCL time and idle, its CPU phases 0.
  bool gpu = false;
  double gpu_computation_ms = 0;
  int64_t first_iteration_begin_ns = 0;  // rank 0's first compared iteration: where timelines align
  // Bus bandwidth of its bucket allreduces of 64 KiB or more in the compared iterations,
  // every rank's: bus bytes over transfer time (collective_bandwidth.h); -1: none to time.
  double busbw_gbps = -1;
};

struct OpChange {
  enum class Change { Appeared, Disappeared, Slower, Faster, Same };
  Kind kind = Kind::Mark;
  std::string name;
  Change change = Change::Same;
  double a_ms = 0, b_ms = 0;        // total time per rank and iteration
  double a_count = 0, b_count = 0;  // calls per rank and iteration
  double delta_ms() const { return b_ms - a_ms; }
};
const char* change_name(OpChange::Change c);

struct RunComparison {
  CompareSide a, b;
  std::vector<OpChange> ops;  // the largest |b_ms - a_ms| first
  std::string headline;       // "B's iteration is 12.3 ms (15%) slower than A's: ..."
  // How the runs' settings differ (run_settings_diff.h): said before the headline, with a
  // warning when there is more than one difference.
  std::vector<SettingDifference> settings;
  // "The runs differ in ...", or empty when their settings agree.
  std::string settings_text() const;
};

// Throws RunStoreError for an unreadable file, ddpscope::Error when a side has no
// finished iteration in its range (the message says which and what it holds).
// `analysis_a`, `analysis_b`: the runs' analyses when the caller holds them (the app
// does), else each run is analysed here.
RunComparison compare_runs(RunStoreReader& a, RunStoreReader& b, IterationRange range_a = {},
                           IterationRange range_b = {}, const RunAnalysis* analysis_a = nullptr,
                           const RunAnalysis* analysis_b = nullptr);
nlohmann::ordered_json comparison_json(const RunComparison& c);
// The comparison as text: the parts, then up to `max_ops` ops.
std::string comparison_text(const RunComparison& c, size_t max_ops = 20);

}  // namespace ddpscope::probes
