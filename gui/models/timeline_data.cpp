#include "timeline_data.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace ddpscope::gui {

TimelineData load_timeline(probes::RunStoreReader& run) {
  TimelineData d;
  std::map<std::pair<int, int>, size_t> lane_of;
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const auto& t : run.threads())
    thread_names[{t.rank, t.thread}] = t.name;
  std::unordered_map<std::string, int32_t> name_ids;
  // Lanes in rank, thread order.
  std::vector<probes::SpanRow> rows = run.spans();
  std::vector<std::pair<int, int>> keys;
  for (const auto& s : rows)
    keys.emplace_back(s.rank, s.thread);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const auto& k : keys) {
    lane_of[k] = d.lanes.size();
    TimelineLane lane;
    lane.rank = k.first;
    lane.thread = k.second;
    const auto name = thread_names.find(k);
    lane.label = "rank " + std::to_string(k.first) + " · " +
                 (name != thread_names.end() ? name->second : "thread " + std::to_string(k.second));
    d.lanes.push_back(std::move(lane));
  }
  bool first = true;
  for (const auto& s : rows) {
    auto [it, inserted] = name_ids.try_emplace(s.name, static_cast<int32_t>(d.names.size()));
    if (inserted) d.names.push_back(s.name);
    const TimelineSpan span{s.t_begin_ns, s.t_end_ns, s.kind, it->second,
                            s.iteration,  s.bucket,   s.bytes};
    TimelineLane& lane = d.lanes[lane_of[{s.rank, s.thread}]];
    (s.t_end_ns > s.t_begin_ns ? lane.spans : lane.instants).push_back(span);
    lane.longest_ns = std::max(lane.longest_ns, s.t_end_ns - s.t_begin_ns);
    d.begin_ns = first ? s.t_begin_ns : std::min(d.begin_ns, s.t_begin_ns);
    d.end_ns = first ? s.t_end_ns : std::max(d.end_ns, s.t_end_ns);
    first = false;
    if (s.kind == probes::Kind::Iteration && s.rank == 0)
      d.iterations.emplace_back(s.t_begin_ns, s.t_end_ns);
  }
  // spans() returns rows by begin time already; keep that order within each lane.
  return d;
}

void mark_exposed(TimelineData& data, const probes::RunAnalysis& analysis) {
  for (TimelineLane& lane : data.lanes) {
    lane.exposed.clear();
    for (const auto& it : analysis.iterations) {
      if (it.rank == lane.rank)
        lane.exposed.insert(lane.exposed.end(), it.exposed.begin(), it.exposed.end());
    }
  }
}

const TimelineSpan* TimelineData::spanAt(size_t lane, int64_t t_ns, int64_t slack_ns) const {
  if (lane >= lanes.size()) return nullptr;
  const auto& spans = lanes[lane].spans;
  // The last span starting at or before t (+ slack); walk back to one that covers t.
  auto it = std::upper_bound(spans.begin(), spans.end(), t_ns + slack_ns,
                             [](int64_t t, const TimelineSpan& s) { return t < s.begin_ns; });
  const TimelineSpan* best = nullptr;
  int steps = 0;
  while (it != spans.begin() && steps++ < 256) {
    --it;
    if (it->end_ns + slack_ns >= t_ns) {
      best = &*it;  // the latest-starting span covering t: the innermost
      break;
    }
  }
  return best;
}

}  // namespace ddpscope::gui
