#include "range_summary.h"

#include <algorithm>
#include <map>
#include <set>

namespace ddpscope::gui {

RangeSummary summarizeRange(const TimelineData& data, int64_t begin_ns, int64_t end_ns) {
  RangeSummary out;
  out.begin_ns = std::min(begin_ns, end_ns);
  out.end_ns = std::max(begin_ns, end_ns);
  struct Sum {
    RangeRow row;
    std::set<int> ranks;
  };
  std::map<std::pair<int, std::string>, Sum> sums;  // (kind, name)
  auto add = [&](const TimelineSpan& s, int rank, const std::string& name, SpanRef ref) {
    const int64_t inside = std::min(s.end_ns, out.end_ns) - std::max(s.begin_ns, out.begin_ns);
    if (inside <= 0) return;
    Sum& sum = sums[{static_cast<int>(s.kind), name}];
    sum.row.count++;
    sum.row.total_ns += inside;
    sum.ranks.insert(rank);
    if (s.end_ns - s.begin_ns > sum.row.longest_ns) {
      sum.row.longest_ns = s.end_ns - s.begin_ns;
      sum.row.longest = ref;
    }
  };
  for (size_t l = 0; l < data.lanes.size(); ++l) {
    const TimelineLane& lane = data.lanes[l];
    // No span starting before (range begin - the lane's longest span) can reach it.
    auto it = std::lower_bound(lane.spans.begin(), lane.spans.end(), out.begin_ns - lane.longest_ns,
                               [](const TimelineSpan& s, int64_t t) { return s.begin_ns < t; });
    for (; it != lane.spans.end() && it->begin_ns < out.end_ns; ++it)
      add(*it, lane.rank, data.nameOf(it->name), {static_cast<int>(l), it - lane.spans.begin(), SpanRef::In::Spans});
    for (size_t o = 0; o < lane.open.size(); ++o)
      add(lane.open[o], lane.rank, data.nameOf(lane.open[o].name) + " (unfinished)",
          {static_cast<int>(l), static_cast<int64_t>(o), SpanRef::In::Open});
  }
  for (auto& [key, sum] : sums) {
    sum.row.name = key.second;
    sum.row.kind = static_cast<probes::Kind>(key.first);
    sum.row.ranks = static_cast<int>(sum.ranks.size());
    out.rows.push_back(std::move(sum.row));
  }
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const RangeRow& a, const RangeRow& b) { return a.total_ns > b.total_ns; });
  return out;
}

}  // namespace ddpscope::gui
