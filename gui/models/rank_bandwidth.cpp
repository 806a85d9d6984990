#include "rank_bandwidth.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ddpscope/median.h"
#include "link_matrix.h"
#include "run_data.h"

namespace ddpscope::gui {

std::map<int, probes::BucketBusTotals> busByRank(const RunData& d, const std::set<int64_t>& leaveOut) {
  std::map<int, std::set<int64_t>> iterations;
  for (const auto& b : d.analysis.buckets)
    iterations[b.rank].insert(b.iteration);
  std::map<int, probes::BucketBusTotals> bus;
  for (const auto& b : d.analysis.buckets) {
    const auto& its = iterations[b.rank];
    if (leaveOut.count(b.iteration) || (its.size() >= 3 && b.iteration == *its.begin())) continue;
    bus[b.rank].add(b);
  }
  return bus;
}

std::string rankBandwidthSentence(const RunData& d) {
  std::set<int64_t> stalled;
  for (const auto& st : d.cause.stalls)
    stalled.insert(st.iteration);
  std::vector<std::pair<double, int>> rates;  // (GB/s, rank)
  for (const auto& [rank, totals] : busByRank(d, stalled))
    if (!std::isnan(totals.gbps())) rates.emplace_back(totals.gbps(), rank);
  if (rates.empty()) return {};
  const auto lowest = *std::min_element(rates.begin(), rates.end());
  std::vector<double> all;
  for (const auto& [gbps, rank] : rates)
    all.push_back(gbps);
  std::string out = "Bus bandwidth in bucket allreduces: ";
  out += rates.size() == 1 ? "rank " + std::to_string(lowest.second) + " at " + probes::rate_text(lowest.first)
                           : "lowest rank " + std::to_string(lowest.second) + " at " + probes::rate_text(lowest.first) +
                                 ", median " + probes::rate_text(median(all));
  if (d.links.ring_ceiling_gbps > 0)
    out += "; the links' measured ceiling is " + probes::link_rate_text(d.links.ring_ceiling_gbps);
  return out + ".";
}

}  // namespace ddpscope::gui
