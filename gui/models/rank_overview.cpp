#include "rank_overview.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace ddpscope::gui {

const char* metricLabel(OverviewMetric m) {
  switch (m) {
    case OverviewMetric::Iteration: return "iteration time";
    case OverviewMetric::Forward: return "forward";
    case OverviewMetric::Backward: return "backward compute";
    case OverviewMetric::ExposedComm: return "exposed communication";
    case OverviewMetric::ExposedWait: return "waiting for other ranks";
    case OverviewMetric::Optimizer: return "optimizer";
    case OverviewMetric::Idle: return "idle / other";
    case OverviewMetric::GpuComputation: return "GPU computation";
  }
  return "?";
}

double metricValue(const probes::TimeBreakdown& r, OverviewMetric m) {
  switch (m) {
    case OverviewMetric::Iteration: return r.iteration_ms;
    case OverviewMetric::Forward: return r.forward_ms;
    case OverviewMetric::Backward: return r.backward_ms;
    case OverviewMetric::ExposedComm: return r.exposed_comm_ms;
    case OverviewMetric::ExposedWait: return r.exposed_wait_ms;
    case OverviewMetric::Optimizer: return r.optimizer_ms;
    case OverviewMetric::Idle: return r.idle_ms;
    case OverviewMetric::GpuComputation: return r.computation_ms;
  }
  return 0;
}

// Puts the rows in `order`, and for ByHost notes each host's group of rows.
static void orderRows(RankOverview& o, OverviewOrder order) {
  const auto slower = [](const OverviewRow& a, const OverviewRow& b) {
    return a.mean_ms != b.mean_ms ? a.mean_ms > b.mean_ms : a.rank < b.rank;
  };
  switch (order) {
    case OverviewOrder::SlowestFirst: {
      std::sort(o.rows.begin(), o.rows.end(), slower);
      // Ties within kTiedFraction of the group's slowest: in rank order.
      for (auto first = o.rows.begin(); first != o.rows.end();) {
        const double tolerance = kTiedFraction * std::abs(first->mean_ms);
        auto last = std::find_if(first, o.rows.end(),
                                 [&](const OverviewRow& r) { return first->mean_ms - r.mean_ms > tolerance; });
        std::sort(first, last, [](const OverviewRow& a, const OverviewRow& b) { return a.rank < b.rank; });
        first = last;
      }
      break;
    }
    case OverviewOrder::ByRank: break;  // the map's order
    case OverviewOrder::ByHost:
      // Hosts with their slowest rank first, and within a host the slowest first.
      std::map<std::string, double> worst;
      for (const auto& r : o.rows)
        worst[r.host] = std::max(worst[r.host], r.mean_ms);
      std::sort(o.rows.begin(), o.rows.end(), [&](const OverviewRow& a, const OverviewRow& b) {
        if (a.host != b.host) return worst[a.host] != worst[b.host] ? worst[a.host] > worst[b.host] : a.host < b.host;
        return slower(a, b);
      });
      for (size_t i = 0; i < o.rows.size(); ++i) {
        if (o.groups.empty() || o.groups.back().host != o.rows[i].host) o.groups.push_back({o.rows[i].host, i, i});
        o.groups.back().last = i;
      }
      break;
  }
}

RankOverview makeRankOverview(const std::vector<probes::TimeBreakdown>& by_iteration,
                              const std::vector<probes::RankRow>& ranks, OverviewMetric metric, OverviewOrder order) {
  RankOverview o;
  o.metric = metric;
  std::map<int, std::string> hosts;
  for (const auto& r : ranks)
    hosts[r.rank] = r.host;
  std::map<int, std::vector<const probes::TimeBreakdown*>> per_rank;
  std::vector<int64_t> iterations;
  for (const auto& b : by_iteration) {
    per_rank[b.rank].push_back(&b);
    iterations.push_back(b.iteration);
  }
  std::sort(iterations.begin(), iterations.end());
  iterations.erase(std::unique(iterations.begin(), iterations.end()), iterations.end());
  o.iterations = iterations;
  for (const auto& [rank, rows] : per_rank) {
    OverviewRow row{rank, hosts.count(rank) ? hosts[rank] : std::string(), 0};
    // The first iteration builds buckets and warms caches: not what marks a straggler.
    const size_t skip = rows.size() > 2 ? 1 : 0;
    for (size_t i = skip; i < rows.size(); ++i)
      row.mean_ms += metricValue(*rows[i], metric);
    row.mean_ms /= static_cast<double>(std::max<size_t>(1, rows.size() - skip));
    o.rows.push_back(row);
  }
  orderRows(o, order);
  std::map<int64_t, size_t> column;
  for (size_t c = 0; c < iterations.size(); ++c)
    column[iterations[c]] = c;
  o.values_ms.assign(o.rows.size() * iterations.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<double> all;
  for (size_t r = 0; r < o.rows.size(); ++r) {
    for (const probes::TimeBreakdown* b : per_rank[o.rows[r].rank]) {
      const double v = metricValue(*b, metric);
      o.values_ms[r * iterations.size() + column[b->iteration]] = static_cast<float>(v);
      all.push_back(v);
    }
  }
  if (!all.empty()) {
    // Percentiles, not the extremes: one warm-up iteration would wash the rest out.
    std::sort(all.begin(), all.end());
    o.low_ms = all[all.size() * 2 / 100];
    o.high_ms = all[std::min(all.size() - 1, all.size() * 98 / 100)];
    // Most cells alike (a few stragglers among many ranks): up to the largest value, so
    // the few stand out instead of every cell reading the same.
    if (o.high_ms - o.low_ms < 0.01 * std::max(o.high_ms, 1e-9)) o.high_ms = all.back();
  }
  std::vector<double> means;
  for (const auto& r : o.rows)
    means.push_back(r.mean_ms);
  if (!means.empty()) {
    std::nth_element(means.begin(), means.begin() + static_cast<std::ptrdiff_t>(means.size() / 2), means.end());
    o.median_rank_mean_ms = means[means.size() / 2];
  }
  return o;
}

SlowestRank slowestRank(const RankOverview& o) {
  SlowestRank s;
  if (o.rows.empty()) return s;
  s.row = &o.rows.front();
  for (const OverviewRow& r : o.rows)
    if (r.mean_ms > s.row->mean_ms || (r.mean_ms == s.row->mean_ms && r.rank < s.row->rank)) s.row = &r;
  std::vector<double> others;
  for (const OverviewRow& r : o.rows)
    if (&r != s.row) {
      others.push_back(r.mean_ms);
      s.other_rank = r.rank;
    }
  s.others = static_cast<int>(others.size());
  if (s.others != 1) s.other_rank = -1;
  if (others.empty()) return s;
  std::sort(others.begin(), others.end());
  const size_t mid = others.size() / 2;
  s.others_ms = others.size() % 2 ? others[mid] : (others[mid - 1] + others[mid]) / 2;
  return s;
}

}  // namespace ddpscope::gui
