#include "span_details.h"

#include <algorithm>
#include <set>

#include "collective_bandwidth.h"
#include "ddpscope/printf_string.h"
#include "link_matrix.h"
#include "time_format.h"

namespace ddpscope::gui {
namespace {

bool isCollective(probes::Kind k) { return k == probes::Kind::Allreduce || k == probes::Kind::PgOp; }

// Its transfer, once every rank's call of the collective is loaded: from the last rank's
// arrival to this one's end (collective_bandwidth.h; the engine starts a group's ops in
// order, so a call's start is its arrival).
void addTransfer(const TimelineData& data, const TimelineSpan& s, SpanDetails& d) {
  std::set<int> ranks, found;
  for (const TimelineLane& lane : data.lanes)
    ranks.insert(lane.rank);
  int64_t last = s.begin_ns;
  for (const SpanRef& o : d.same_collective) {
    const TimelineLane& lane = data.lanes[static_cast<size_t>(o.lane)];
    const auto& list = o.in == SpanRef::In::Spans ? lane.spans : lane.open;
    if (!found.insert(lane.rank).second) return;  // a rank with two: not one collective
    last = std::max(last, list[static_cast<size_t>(o.index)].begin_ns);
  }
  if (d.unfinished || found.size() + 1 != ranks.size() || s.end_ns <= last) return;
  d.transfer_ns = s.end_ns - last;
  d.group_ranks = std::max(static_cast<int>(ranks.size()), data.world_size);
  d.every_arrival = d.group_ranks == static_cast<int>(ranks.size());
  d.ceiling_gbps = data.link_ceiling_gbps;
}

}  // namespace

std::string spanTitle(const TimelineData& data, const SpanRef& ref) {
  const TimelineSpan* s = data.resolve(ref);
  if (!s) return {};
  std::string t = s->kind == probes::Kind::Allreduce && s->bucket >= 0 ? "allreduce bucket " + std::to_string(s->bucket)
                                                                       : data.nameOf(s->name);
  t += " · rank " + std::to_string(data.lanes[static_cast<size_t>(ref.lane)].rank);
  if (ref.in == SpanRef::In::Instants) return t + " · at " + formatDuration(s->begin_ns - data.begin_ns);
  return t + " · " + formatDuration(s->end_ns - s->begin_ns) + (ref.in == SpanRef::In::Open ? " (unfinished)" : "");
}

SpanDetails spanDetails(const TimelineData& data, const SpanRef& ref, bool with_relations) {
  SpanDetails d;
  const TimelineSpan* s = data.resolve(ref);
  if (!s) return d;
  const TimelineLane& lane = data.lanes[static_cast<size_t>(ref.lane)];
  d.ref = ref;
  d.name = data.nameOf(s->name);
  d.kind = probes::kind_name(s->kind);
  d.thread = lane.thread_name;
  d.rank = lane.rank;
  d.begin_ns = s->begin_ns;
  d.end_ns = s->end_ns;
  d.start_ns = s->begin_ns - data.begin_ns;
  d.duration_ns = s->end_ns - s->begin_ns;
  d.instant = ref.in == SpanRef::In::Instants;
  d.unfinished = ref.in == SpanRef::In::Open;
  d.iteration = s->iteration;
  d.bucket = s->bucket;
  d.param = s->param;
  d.bytes = s->bytes;
  d.seq = s->seq;
  d.rowid = s->rowid;
  if (s->param >= 0) {
    const auto it = data.param_names.find({lane.rank, s->param});
    if (it != data.param_names.end()) d.param_name = it->second;
  }
  if (!with_relations) return d;
  if (ref.in == SpanRef::In::Spans) {
    const auto& spans = lane.spans;
    const size_t i = static_cast<size_t>(ref.index);
    // Parent: the innermost span of an earlier row covering this one's start (the one it
    // started in). Rows are by nesting, so the walk back meets it before its ancestors.
    int best_row = -1;
    for (size_t k = i, steps = 0; k-- > 0 && steps < (1u << 20); ++steps) {
      const TimelineSpan& p = spans[k];
      if (p.row < s->row && p.end_ns >= s->begin_ns && p.row > best_row && p.begin_ns <= s->begin_ns) {
        d.parent = {ref.lane, static_cast<int64_t>(k), SpanRef::In::Spans};
        best_row = p.row;
        if (best_row == s->row - 1) break;
      }
    }
    // Children: spans one row down that start and end within this one.
    for (size_t k = i + 1; k < spans.size() && spans[k].begin_ns < s->end_ns; ++k) {
      const TimelineSpan& c = spans[k];
      if (c.row != s->row + 1 || c.end_ns > s->end_ns) continue;
      if (d.children.size() == SpanDetails::kMaxChildren) {
        d.children_truncated = true;
        break;
      }
      d.children.push_back({ref.lane, static_cast<int64_t>(k), SpanRef::In::Spans});
    }
  }
  if (isCollective(s->kind) && s->seq >= 0) {
    for (size_t l = 0; l < data.lanes.size(); ++l) {
      const TimelineLane& other = data.lanes[l];
      if (other.rank == lane.rank) continue;
      for (const auto* v : {&other.spans, &other.open}) {
        for (size_t k = 0; k < v->size(); ++k) {
          const TimelineSpan& o = (*v)[k];
          if (o.kind == s->kind && o.seq == s->seq && data.nameOf(o.name) == d.name)
            d.same_collective.push_back({static_cast<int>(l), static_cast<int64_t>(k),
                                         v == &other.spans ? SpanRef::In::Spans : SpanRef::In::Open});
        }
      }
    }
    addTransfer(data, *s, d);
  }
  return d;
}

std::vector<std::pair<std::string, std::string>> SpanDetails::fields() const {
  std::vector<std::pair<std::string, std::string>> f;
  if (!ref.valid()) return f;
  f.emplace_back("Name", name);
  f.emplace_back("Kind", kind + (unfinished ? " (unfinished: started, never ended)" : ""));
  f.emplace_back("Rank", std::to_string(rank));
  f.emplace_back("Thread", thread);
  f.emplace_back(instant ? "At" : "Start", formatDuration(start_ns) + " after the run's start");
  if (!instant) f.emplace_back("Duration", formatDuration(duration_ns) + (unfinished ? " so far" : ""));
  if (iteration >= 0) f.emplace_back("Iteration", std::to_string(iteration));
  if (bucket >= 0) f.emplace_back("Bucket", std::to_string(bucket));
  if (param >= 0)
    f.emplace_back("Parameter",
                   param_name.empty() ? std::to_string(param) : param_name + " (#" + std::to_string(param) + ")");
  if (bytes >= 0) f.emplace_back("Bytes", std::to_string(bytes));
  if (seq >= 0) f.emplace_back("Sequence number", std::to_string(seq));
  if (const auto rate = probes::transfer_rate(name, bytes, group_ranks, transfer_ns)) {
    f.emplace_back("Transfer",
                   formatDuration(transfer_ns) +
                       (every_arrival ? " after the last of " + std::to_string(group_ranks) + " ranks arrived"
                                      : " after the last recorded rank arrived (the run holds some of the " +
                                            std::to_string(group_ranks) + " ranks: at most)"));
    std::string of_ceiling;
    if (ceiling_gbps > 0)  // NaN: not measured
      of_ceiling = printf_string(" (%.0f%% of the links' measured ceiling, ", 100 * rate->busbw_gbps / ceiling_gbps) +
                   probes::link_rate_text(ceiling_gbps) + ")";
    f.emplace_back("Bandwidth", std::string(every_arrival ? "" : "at least ") + probes::rate_text(rate->busbw_gbps) +
                                    " bus, " + probes::rate_text(rate->algbw_gbps) + " algorithm" + of_ceiling);
  }
  // A link test's exchange: the link's rate in that exchange, as links are sold.
  if (kind == probes::kind_name(probes::Kind::LinkTest) && bytes > 0 && duration_ns > 0)
    f.emplace_back("Rate", probes::link_rate_text(static_cast<double>(bytes) / static_cast<double>(duration_ns)));
  if (rowid > 0) f.emplace_back("Run-file row", std::to_string(rowid));
  return f;
}

}  // namespace ddpscope::gui
