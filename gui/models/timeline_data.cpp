#include "timeline_data.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

namespace ddpscope::gui {
namespace {

// Rebuilds d.flows from every end seen so far (lanes sorted already): a message's send
// and receive joined by (id, wire kind); an allreduce's starts joined rank to rank.
void pair_flows(TimelineData& d) {
  std::map<std::pair<int, int>, uint32_t> lane_of;
  for (size_t i = 0; i < d.lanes.size(); ++i)
    lane_of[{d.lanes[i].rank, d.lanes[i].thread}] = static_cast<uint32_t>(i);
  std::map<std::pair<int64_t, int32_t>, std::pair<const FlowEnd*, const FlowEnd*>> messages;  // (send, recv)
  std::unordered_map<int64_t, std::vector<const FlowEnd*>> collectives;
  for (const FlowEnd& e : d.flow_ends) {
    if (e.kind == probes::Kind::Allreduce) {
      collectives[e.key].push_back(&e);
      continue;
    }
    auto& m = messages[{e.key, e.param}];
    (e.kind == probes::Kind::RpcSend ? m.first : m.second) = &e;
  }
  d.flows.clear();
  d.longest_flow_ns = 0;
  auto add = [&](const FlowEnd& a, const FlowEnd& b, TimelineFlow::Kind kind) {
    d.flows.push_back({a.t_ns, b.t_ns, lane_of.at({a.rank, a.thread}), lane_of.at({b.rank, b.thread}), kind});
    d.longest_flow_ns = std::max(d.longest_flow_ns, std::abs(b.t_ns - a.t_ns));
  };
  for (const auto& [key, ends] : messages) {
    if (ends.first && ends.second) add(*ends.first, *ends.second, TimelineFlow::Kind::Message);
  }
  for (auto& [seq, ends] : collectives) {
    std::sort(ends.begin(), ends.end(), [](const FlowEnd* a, const FlowEnd* b) { return a->rank < b->rank; });
    for (size_t i = 1; i < ends.size(); ++i) {
      if (ends[i]->rank != ends[i - 1]->rank) add(*ends[i - 1], *ends[i], TimelineFlow::Kind::Collective);
    }
  }
  std::sort(d.flows.begin(), d.flows.end(), [](const TimelineFlow& a, const TimelineFlow& b) {
    return std::min(a.from_ns, a.to_ns) < std::min(b.from_ns, b.to_ns);
  });
}

}  // namespace

TimelineData load_timeline(probes::RunStoreReader& run) {
  TimelineData d;
  extend_timeline(d, run);
  return d;
}

void extend_timeline(TimelineData& d, probes::RunStoreReader& run) {
  d.names = run.names();  // TimelineSpan::name is the run file's name_id
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const auto& t : run.threads())
    thread_names[{t.rank, t.thread}] = t.name;
  std::map<std::pair<int, int>, size_t> lane_of;
  std::vector<size_t> old_spans, old_instants;  // per lane: what was there before
  for (size_t i = 0; i < d.lanes.size(); ++i) {
    lane_of[{d.lanes[i].rank, d.lanes[i].thread}] = i;
    old_spans.push_back(d.lanes[i].spans.size());
    old_instants.push_back(d.lanes[i].instants.size());
  }
  const size_t old_iterations = d.iterations.size();
  // One pass over the new spans without their strings (a 1M-span run opens in well
  // under a second); lanes are found by (rank, thread), with the last one cached.
  std::pair<int, int> last_key{-1, -1};
  size_t lane = 0;
  bool first = d.lanes.empty();
  run.for_each_span(
      [&](const probes::CompactSpan& s) {
        const std::pair<int, int> key{s.rank, s.thread};
        if (key != last_key || lane >= d.lanes.size()) {
          auto [it, inserted] = lane_of.try_emplace(key, d.lanes.size());
          if (inserted) {
            d.lanes.emplace_back();
            d.lanes.back().rank = key.first;
            d.lanes.back().thread = key.second;
            old_spans.push_back(0);
            old_instants.push_back(0);
          }
          lane = it->second;
          last_key = key;
        }
        TimelineLane& l = d.lanes[lane];
        const TimelineSpan span{s.t_begin_ns, s.t_end_ns, s.kind, s.name_id,
                                s.iteration,  s.bucket,   s.bytes};
        (s.t_end_ns > s.t_begin_ns ? l.spans : l.instants).push_back(span);
        l.longest_ns = std::max(l.longest_ns, s.t_end_ns - s.t_begin_ns);
        d.begin_ns = first ? s.t_begin_ns : std::min(d.begin_ns, s.t_begin_ns);
        d.end_ns = first ? s.t_end_ns : std::max(d.end_ns, s.t_end_ns);
        first = false;
        d.last_rowid = std::max(d.last_rowid, s.rowid);
        if (s.kind == probes::Kind::Iteration && s.rank == 0)
          d.iterations.emplace_back(s.t_begin_ns, s.t_end_ns);
        if ((s.kind == probes::Kind::RpcSend || s.kind == probes::Kind::RpcRecv) && s.msg_id >= 0) {
          d.flow_ends.push_back({s.rank, s.thread, s.t_begin_ns, s.msg_id, static_cast<int32_t>(s.param), s.kind});
        } else if (s.kind == probes::Kind::Allreduce && s.seq >= 0) {
          d.flow_ends.push_back({s.rank, s.thread, s.t_begin_ns, s.seq, -1, s.kind});
        }
      },
      {}, -1, d.last_rowid);
  // Spans by begin time within each lane (the file holds them in shipping order: by
  // time within a batch, an enclosing span after its children): sort what is new, then
  // merge it with what was there.
  const auto by_begin = [](const TimelineSpan& a, const TimelineSpan& b) {
    return a.begin_ns < b.begin_ns || (a.begin_ns == b.begin_ns && a.end_ns > b.end_ns);
  };
  // Returns the first index whose span changed.
  auto sort_tail = [&](std::vector<TimelineSpan>& v, size_t old) -> size_t {
    if (old >= v.size()) return v.size();
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(old);
    std::stable_sort(mid, v.end(), by_begin);
    const auto changed = std::upper_bound(v.begin(), mid, *mid, by_begin);
    std::inplace_merge(v.begin(), mid, v.end(), by_begin);
    return static_cast<size_t>(changed - v.begin());
  };
  for (size_t i = 0; i < d.lanes.size(); ++i) {
    TimelineLane& l = d.lanes[i];
    const size_t changed = sort_tail(l.spans, old_spans[i]);
    sort_tail(l.instants, old_instants[i]);
    // Blocks from the first one the new spans changed.
    const size_t from = changed / TimelineLane::kBlock;
    const size_t blocks = (l.spans.size() + TimelineLane::kBlock - 1) / TimelineLane::kBlock;
    l.block_max_end.resize(blocks);
    l.block_kinds.resize(blocks);
    for (size_t b = from; b < blocks; ++b) {
      int64_t max_end = std::numeric_limits<int64_t>::min();
      uint32_t kinds = 0;
      const size_t end = std::min(l.spans.size(), (b + 1) * TimelineLane::kBlock);
      for (size_t k = b * TimelineLane::kBlock; k < end; ++k) {
        max_end = std::max(max_end, l.spans[k].end_ns);
        kinds |= 1u << static_cast<unsigned>(l.spans[k].kind);
      }
      l.block_max_end[b] = max_end;
      l.block_kinds[b] = kinds;
    }
    const auto name = thread_names.find({l.rank, l.thread});
    l.label = "rank " + std::to_string(l.rank) + " · " +
              (name != thread_names.end() ? name->second : "thread " + std::to_string(l.thread));
  }
  // Lanes in (rank, thread) order.
  std::stable_sort(d.lanes.begin(), d.lanes.end(),
                   [](const TimelineLane& a, const TimelineLane& b) {
                     return std::pair(a.rank, a.thread) < std::pair(b.rank, b.thread);
                   });
  pair_flows(d);
  std::sort(d.iterations.begin() + static_cast<std::ptrdiff_t>(old_iterations), d.iterations.end());
  std::inplace_merge(d.iterations.begin(),
                     d.iterations.begin() + static_cast<std::ptrdiff_t>(old_iterations),
                     d.iterations.end());
}

void mark_exposed(TimelineData& data, const probes::RunAnalysis& analysis) {
  // On the rank's compute lane (its first lane when it has none): a band on every lane
  // of the rank (RPC pools, comm threads) would only repeat it.
  std::map<int, size_t> band_lane;
  for (size_t i = 0; i < data.lanes.size(); ++i) {
    const bool compute = data.lanes[i].label.size() >= 7 &&
                         data.lanes[i].label.compare(data.lanes[i].label.size() - 7, 7, "compute") == 0;
    auto [it, inserted] = band_lane.try_emplace(data.lanes[i].rank, i);
    if (compute) it->second = i;
  }
  for (size_t i = 0; i < data.lanes.size(); ++i) {
    TimelineLane& lane = data.lanes[i];
    lane.exposed.clear();
    if (band_lane.at(lane.rank) != i) continue;
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
