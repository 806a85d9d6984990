// RankOverview: every rank's every iteration at a glance, for a job of a thousand ranks:
// one value per (rank, iteration) from the time breakdown (iteration time, exposed
// communication, or another part), ranks ordered so the ones to look at come first (the
// slowest, by their mean), or by rank, or grouped by host. Plain data; the Ranks page
// paints it as a heat map.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run_store_reader.h"
#include "time_breakdown.h"

namespace ddpscope::gui {

enum class OverviewMetric { Iteration, Forward, Backward, ExposedComm, ExposedWait, Optimizer, Idle, GpuComputation };
enum class OverviewOrder { SlowestFirst, ByRank, ByHost };

// The metric's name as the page's chooser shows it ("exposed communication").
const char* metricLabel(OverviewMetric m);
double metricValue(const probes::TimeBreakdown& row, OverviewMetric m);

struct OverviewRow {
  int rank = 0;
  std::string host;
  double mean_ms = 0;  // over the iterations it has (the warm-up left out when there are more than two)
};

struct RankOverview {
  OverviewMetric metric = OverviewMetric::Iteration;
  std::vector<OverviewRow> rows;    // in the order chosen
  std::vector<int64_t> iterations;  // the columns, ascending
  std::vector<float> values_ms;     // rows.size() x iterations.size(), row-major; NaN: none
  double low_ms = 0, high_ms = 0;   // the colour scale: the 2nd and 98th percentiles of the values
  double median_rank_mean_ms = 0;   // of rows[].mean_ms
  float at(size_t row, size_t column) const { return values_ms[row * iterations.size() + column]; }
  // Host groups in `rows` order (ByHost): [first row, last row] per host.
  struct Group {
    std::string host;
    size_t first = 0, last = 0;
  };
  std::vector<Group> groups;
};

RankOverview makeRankOverview(const std::vector<probes::TimeBreakdown>& by_iteration,
                              const std::vector<probes::RankRow>& ranks, OverviewMetric metric, OverviewOrder order);

// The slowest row of `o` and what the Ranks tab compares it with: the median of the other
// ranks' means (with two ranks, the other one), never a median that is the slowest itself.
struct SlowestRank {
  const OverviewRow* row = nullptr;  // null: no rows
  double others_ms = 0;              // the others' median mean
  int others = 0;                    // how many other ranks
  int other_rank = -1;               // the one other rank, when there is one
  // The slowest is this much above the others, in percent.
  double overPercent() const { return others_ms > 0 ? 100 * (row->mean_ms / others_ms - 1) : 0; }
};
SlowestRank slowestRank(const RankOverview& o);

// Means closer than this share a place when sorting slowest first, in rank order: ranks
// that read alike are not ordered by noise (1, 3, 5, 7, then 0, 2, 4).
inline constexpr double kTiedFraction = 0.005;

}  // namespace ddpscope::gui
