#include "timeline_data.h"

#include <cstdio>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

namespace ddpscope::gui {
namespace {

bool isGpuWork(probes::Kind k) {
  return k == probes::Kind::GpuKernel || k == probes::Kind::GpuComm || k == probes::Kind::GpuMemcpy ||
         k == probes::Kind::GpuMemset;
}

// Rebuilds d.flows from every end seen so far (lanes sorted already): a message's send
// and receive joined by (id, wire kind); an allreduce's starts joined rank to rank; a
// CUDA launch to its GPU work.
void pairFlows(TimelineData& d, bool append = false) {
  std::map<std::pair<int, int>, uint32_t> lane_of;
  for (size_t i = 0; i < d.lanes.size(); ++i)
    lane_of[{d.lanes[i].rank, d.lanes[i].thread}] = static_cast<uint32_t>(i);
  std::map<std::pair<int64_t, int32_t>, std::pair<const FlowEnd*, const FlowEnd*>> messages;  // (send, recv)
  std::unordered_map<int64_t, std::vector<const FlowEnd*>> collectives;
  std::map<std::pair<int32_t, int64_t>, std::pair<const FlowEnd*, const FlowEnd*>> launches;  // (launch, GPU work)
  for (const FlowEnd& e : d.flow_ends) {
    if (e.kind == probes::Kind::Allreduce) {
      collectives[e.key].push_back(&e);
      continue;
    }
    if (e.kind == probes::Kind::CudaRuntime || isGpuWork(e.kind)) {
      auto& l = launches[{e.rank, e.key}];
      (e.kind == probes::Kind::CudaRuntime ? l.first : l.second) = &e;
      continue;
    }
    auto& m = messages[{e.key, e.param}];
    (e.kind == probes::Kind::RpcSend ? m.first : m.second) = &e;
  }
  std::vector<TimelineFlow> found;
  int64_t longest = append ? d.longest_flow_ns : 0;
  auto add = [&](const FlowEnd& a, const FlowEnd& b, TimelineFlow::Kind kind) {
    found.push_back({a.t_ns, b.t_ns, lane_of.at({a.rank, a.thread}), lane_of.at({b.rank, b.thread}), kind});
    longest = std::max(longest, std::abs(b.t_ns - a.t_ns));
  };
  for (const auto& [key, ends] : messages) {
    if (ends.first && ends.second) add(*ends.first, *ends.second, TimelineFlow::Kind::Message);
  }
  for (const auto& [key, ends] : launches) {
    if (ends.first && ends.second) add(*ends.first, *ends.second, TimelineFlow::Kind::Launch);
  }
  for (auto& [seq, ends] : collectives) {
    std::sort(ends.begin(), ends.end(), [](const FlowEnd* a, const FlowEnd* b) { return a->rank < b->rank; });
    for (size_t i = 1; i < ends.size(); ++i) {
      if (ends[i]->rank != ends[i - 1]->rank) add(*ends[i - 1], *ends[i], TimelineFlow::Kind::Collective);
    }
  }
  d.longest_flow_ns = longest;
  if (!append) d.flow_kinds_present = 0;
  for (const TimelineFlow& f : found)
    d.flow_kinds_present |= static_cast<uint8_t>(1u << static_cast<unsigned>(f.kind));
  if (append && found.empty()) return;  // the flows stay shared with the timeline copied
  std::vector<TimelineFlow>& flows = d.flows.edit();
  if (!append) flows.clear();
  flows.insert(flows.end(), found.begin(), found.end());
  std::sort(flows.begin(), flows.end(), [](const TimelineFlow& a, const TimelineFlow& b) {
    return std::min(a.from_ns, a.to_ns) < std::min(b.from_ns, b.to_ns);
  });
}

// After lanes were added and ordered again, the flows' lane numbers follow their lanes
// (`before`: each old number's rank and thread).
void renumberFlowLanes(TimelineData& d, const std::vector<std::pair<int, int>>& before) {
  if (before.size() == d.lanes.size()) return;  // no lane added: the order is unchanged
  std::map<std::pair<int, int>, uint32_t> now;
  for (size_t i = 0; i < d.lanes.size(); ++i)
    now[{d.lanes[i].rank, d.lanes[i].thread}] = static_cast<uint32_t>(i);
  for (TimelineFlow& f : d.flows.edit()) {
    f.from_lane = now.at(before[f.from_lane]);
    f.to_lane = now.at(before[f.to_lane]);
  }
}

// Gives each span of `lane` (sorted by begin) its row. Spans stack by nesting depth; a
// bucket allreduce (launch to completion: asynchronous) that outlives the span it was
// launched in is packed first-fit into rows below the nested ones, so it neither covers
// backward nor pushes the autograd nodes after it down. Another kind that overruns its
// parent (a span closed during unwinding, after the iteration that held it) still
// stacks: no two spans of a row overlap either way, since a row's next span comes only
// after the previous one was popped. Open ops follow, a row each. Rows past 255 share
// the last.
void assignRows(TimelineLane& lane) {
  std::vector<int64_t> open_ends;  // the ends of the enclosing spans, outermost first
  std::vector<size_t> async;
  int nested_rows = 0;
  for (size_t i = 0; i < lane.spans.size(); ++i) {
    TimelineSpan& s = lane.spans[i];
    while (!open_ends.empty() && open_ends.back() <= s.begin_ns)
      open_ends.pop_back();
    if (!open_ends.empty() && s.end_ns > open_ends.back() && s.kind == probes::Kind::Allreduce) {
      async.push_back(i);
      continue;
    }
    s.row = static_cast<uint8_t>(std::min<size_t>(open_ends.size(), 255));
    nested_rows = std::max(nested_rows, s.row + 1);
    open_ends.push_back(s.end_ns);
  }
  std::vector<int64_t> async_row_end;  // per async row: the end of its last span
  for (size_t i : async) {
    TimelineSpan& s = lane.spans[i];
    size_t r = 0;
    while (r < async_row_end.size() && async_row_end[r] > s.begin_ns)
      ++r;
    if (r == async_row_end.size()) async_row_end.push_back(s.end_ns);
    async_row_end[r] = s.end_ns;
    s.row = static_cast<uint8_t>(std::min<size_t>(nested_rows + r, 255));
  }
  int rows = nested_rows + static_cast<int>(async_row_end.size());
  for (TimelineSpan& o : lane.open)
    o.row = static_cast<uint8_t>(std::min(rows++, 255));
  lane.rows = std::max(1, std::min(rows, 256));
}

// Level of detail per block of spans, from block `from` on.
void summarizeBlocks(TimelineLane& l, size_t from) {
  const size_t blocks = (l.spans.size() + TimelineLane::kBlock - 1) / TimelineLane::kBlock;
  l.block_max_end.resize(blocks);
  l.block_row_kinds.resize(blocks);
  for (size_t b = from; b < blocks; ++b) {
    int64_t max_end = std::numeric_limits<int64_t>::min();
    std::array<uint8_t, TimelineLane::kLodRows> kinds;
    kinds.fill(TimelineLane::kNoKind);
    const size_t end = std::min(l.spans.size(), (b + 1) * TimelineLane::kBlock);
    for (size_t k = b * TimelineLane::kBlock; k < end; ++k) {
      max_end = std::max(max_end, l.spans[k].end_ns);
      if (l.spans[k].row < TimelineLane::kLodRows) kinds[l.spans[k].row] = static_cast<uint8_t>(l.spans[k].kind);
    }
    l.block_max_end[b] = max_end;
    l.block_row_kinds[b] = kinds;
  }
}

// A rank's iteration that began (its forward, say, was recorded) and never ended: the run
// failed or was stopped in it. It is drawn open from its first span to the run's end, as
// the stalled rank's iteration must be seen, not missing. Spans are by begin time: the
// walk back from the lane's end stops at its last finished iteration.
void addOpenIteration(TimelineData& d, TimelineLane& l) {
  int32_t last_done = -1, open_iteration = -1, name = -1;
  int64_t open_begin = 0, last_done_end = 0;
  for (auto it = l.spans.rbegin(); it != l.spans.rend(); ++it) {
    if (it->kind == probes::Kind::Iteration) {
      last_done = it->iteration;
      last_done_end = it->end_ns;
      name = it->name;
      break;
    }
    if (it->iteration >= 0 && it->iteration > open_iteration) open_iteration = it->iteration;
  }
  if (last_done < 0 || open_iteration <= last_done) return;
  open_begin = d.end_ns;
  for (auto it = l.spans.rbegin(); it != l.spans.rend() && it->kind != probes::Kind::Iteration; ++it) {
    if (it->iteration == open_iteration) open_begin = std::min(open_begin, it->begin_ns);
  }
  TimelineSpan o;
  o.kind = probes::Kind::Iteration;
  o.iteration = open_iteration;
  o.name = name;
  o.begin_ns = std::max(open_begin, last_done_end);
  o.end_ns = std::max(d.end_ns, o.begin_ns + 1);
  o.rowid = 0;
  l.open.insert(l.open.begin(), o);  // the iteration above the ops it holds
}

// Each lane's PgOpStart instants with no PgOp of the same (rank, name, seq): unfinished.
// Names compare as strings: the start and the op are recorded at different call sites,
// so their name ids differ.
void findOpenOps(TimelineData& d) {
  std::unordered_map<std::string, int32_t> first_id;
  std::vector<int32_t> canonical(d.names.size());
  for (size_t i = 0; i < d.names.size(); ++i)
    canonical[i] = first_id.try_emplace(d.names[i], static_cast<int32_t>(i)).first->second;
  auto canon = [&](int32_t id) { return id >= 0 && static_cast<size_t>(id) < canonical.size() ? canonical[id] : id; };
  std::set<std::tuple<int, int32_t, int64_t>> finished;
  for (const auto& [rank, name, seq] : d.finished_ops)
    finished.insert({rank, canon(name), seq});
  for (TimelineLane& l : d.lanes) {
    l.open.clear();
    for (const TimelineSpan& i : l.instants) {
      if (i.kind != probes::Kind::PgOpStart) continue;
      if (finished.count({l.rank, canon(i.name), i.seq})) continue;
      TimelineSpan o = i;
      o.kind = probes::Kind::PgOp;
      o.end_ns = std::max(d.end_ns, i.begin_ns + 1);
      o.rowid = 0;
      l.open.push_back(o);
    }
    addOpenIteration(d, l);
  }
}

// Parameter names for the details panel and search (the latest generation's name of
// each index: a rebuilt assignment keeps the model's parameters).
void readParamNames(TimelineData& d, probes::RunStoreReader& run) {
  if (!d.param_names.empty()) return;
  for (const auto& r : run.ranks()) {
    for (const auto& p : run.params(r.rank))
      d.param_names[{p.rank, p.index}] = p.name;
  }
}

// New spans appended to their lanes, found by (rank, thread) with the last one cached;
// remembers how much each lane held before, for the merge.
class LaneAppender {
 public:
  explicit LaneAppender(TimelineData& d) : d_(d), first_(d.lanes.empty()) {
    for (size_t i = 0; i < d.lanes.size(); ++i) {
      lane_of_[{d.lanes[i].rank, d.lanes[i].thread}] = i;
      old_spans_.push_back(d.lanes[i].spans.size());
      old_instants_.push_back(d.lanes[i].instants.size());
    }
  }

  void add(const probes::CompactSpan& s) {
    TimelineLane& l = laneFor({s.rank, s.thread});
    TimelineSpan span;
    span.begin_ns = s.t_begin_ns;
    span.end_ns = s.t_end_ns;
    span.bytes = s.bytes;
    span.seq = static_cast<int32_t>(s.seq);
    span.rowid = s.rowid < (int64_t{1} << 39) ? s.rowid : 0;
    span.name = s.name_id;
    span.iteration = static_cast<int32_t>(s.iteration);
    span.bucket = static_cast<int16_t>(s.bucket);
    span.param = s.param >= 0 && s.param < (int64_t{1} << 22) ? static_cast<int32_t>(s.param) : -1;
    span.kind = s.kind;
    span.cut_short = s.ended_by_error;
    (s.t_end_ns > s.t_begin_ns ? l.spans : l.instants).push_back(span);
    l.longest_ns = std::max(l.longest_ns, s.t_end_ns - s.t_begin_ns);
    d_.begin_ns = first_ ? s.t_begin_ns : std::min(d_.begin_ns, s.t_begin_ns);
    d_.end_ns = first_ ? s.t_end_ns : std::max(d_.end_ns, s.t_end_ns);
    first_ = false;
    noteRunFacts(s);
  }

  size_t oldSpans(size_t lane) const { return old_spans_[lane]; }
  size_t oldInstants(size_t lane) const { return old_instants_[lane]; }

 private:
  TimelineLane& laneFor(std::pair<int, int> key) {
    if (key != last_key_ || lane_ >= d_.lanes.size()) {
      auto [it, inserted] = lane_of_.try_emplace(key, d_.lanes.size());
      if (inserted) {
        d_.lanes.emplace_back();
        d_.lanes.back().rank = key.first;
        d_.lanes.back().thread = key.second;
        old_spans_.push_back(0);
        old_instants_.push_back(0);
      }
      lane_ = it->second;
      last_key_ = key;
    }
    return d_.lanes[lane_];
  }

  // What the whole timeline keeps of a span: kinds, finished ops, iterations, flow ends.
  void noteRunFacts(const probes::CompactSpan& s) {
    d_.kinds_present |= uint64_t{1} << static_cast<unsigned>(s.kind);
    d_.cut_short_present = d_.cut_short_present || s.ended_by_error;
    if (s.kind == probes::Kind::PgOp) d_.finished_ops.insert({s.rank, s.name_id, s.seq});
    d_.last_rowid = std::max(d_.last_rowid, s.rowid);
    if (s.kind == probes::Kind::Iteration && s.rank == 0)
      d_.iterations.push_back({s.t_begin_ns, s.t_end_ns, s.iteration});
    if ((s.kind == probes::Kind::RpcSend || s.kind == probes::Kind::RpcRecv) && s.msg_id >= 0) {
      d_.flow_ends.push_back({s.rank, s.thread, s.t_begin_ns, s.msg_id, static_cast<int32_t>(s.param), s.kind});
    } else if (s.kind == probes::Kind::Allreduce && s.seq >= 0) {
      d_.flow_ends.push_back({s.rank, s.thread, s.t_begin_ns, s.seq, -1, s.kind});
    } else if ((s.kind == probes::Kind::CudaRuntime || isGpuWork(s.kind)) && s.msg_id >= 0) {
      d_.flow_ends.push_back({s.rank, s.thread, s.t_begin_ns, s.msg_id, -1, s.kind});
    }
  }

  TimelineData& d_;
  std::map<std::pair<int, int>, size_t> lane_of_;
  std::vector<size_t> old_spans_, old_instants_;  // per lane: what was there before
  std::pair<int, int> last_key_{-1, -1};
  size_t lane_ = 0;
  bool first_;
};

// Spans by begin time within each lane (the file holds them in shipping order: by time
// within a batch, an enclosing span after its children): sort what is new, then merge it
// with what was there. Each lane gets its thread's name.
void sortNewSpans(TimelineData& d, const LaneAppender& appended, probes::RunStoreReader& run) {
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const auto& t : run.threads())
    thread_names[{t.rank, t.thread}] = t.name;
  const auto by_begin = [](const TimelineSpan& a, const TimelineSpan& b) {
    return a.begin_ns < b.begin_ns || (a.begin_ns == b.begin_ns && a.end_ns > b.end_ns);
  };
  auto sort_tail = [&](std::vector<TimelineSpan>& v, size_t old) {
    if (old >= v.size()) return;
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(old);
    std::stable_sort(mid, v.end(), by_begin);
    std::inplace_merge(v.begin(), mid, v.end(), by_begin);
  };
  for (size_t i = 0; i < d.lanes.size(); ++i) {
    TimelineLane& l = d.lanes[i];
    sort_tail(l.spans, appended.oldSpans(i));
    sort_tail(l.instants, appended.oldInstants(i));
    const auto name = thread_names.find({l.rank, l.thread});
    l.thread_name = name != thread_names.end() ? name->second : "thread " + std::to_string(l.thread);
    l.label = "rank " + std::to_string(l.rank) + " · " + l.thread_name;
  }
}

// Lanes by rank; within a rank the compute thread first (where forward and backward run:
// what the eye looks for first), then the others by thread number, and an imported
// trace's GPU streams last, by device and stream number as Nsight lists them.
void orderLanes(TimelineData& d) {
  auto gpu_stream = [](const TimelineLane& l) {
    int device = -1, stream = -1;
    if (std::sscanf(l.thread_name.c_str(), "GPU %d stream %d", &device, &stream) != 2) return std::pair(-1, -1);
    return std::pair(device, stream);
  };
  std::stable_sort(d.lanes.begin(), d.lanes.end(), [&](const TimelineLane& a, const TimelineLane& b) {
    return std::tuple(a.rank, a.thread_name != "compute", gpu_stream(a), a.thread) <
           std::tuple(b.rank, b.thread_name != "compute", gpu_stream(b), b.thread);
  });
}

}  // namespace

namespace {

std::vector<probes::Kind> kindsWhere(bool detail) {
  std::vector<probes::Kind> kinds;
  for (int k = 0; k < probes::kNumKinds; ++k) {
    if (probes::is_detail_kind(static_cast<uint8_t>(k)) == detail) kinds.push_back(static_cast<probes::Kind>(k));
  }
  return kinds;
}

// Adds the spans the scan's filters pass (after `after_rowid`, of `kinds`, in `window`),
// then arranges every lane again: order, rows, summaries, flows. `detail_only`: the new
// spans are detail kinds added to a finished run's structure, whose open ops stand and
// whose flows are paired (its flow ends and finished ops were dropped).
void appendSpans(TimelineData& d, probes::RunStoreReader& run, const std::vector<probes::Kind>& kinds,
                 probes::TimeWindow window, bool detail_only = false) {
  d.names = run.names();  // TimelineSpan::name is the run file's name_id
  readParamNames(d, run);
  const size_t old_iterations = d.iterations.size();
  // One pass over the new spans without their strings (a 1M-span run opens in well
  // under a second).
  std::vector<std::pair<int, int>> lanes_before;
  for (const TimelineLane& l : d.lanes)
    lanes_before.emplace_back(l.rank, l.thread);
  LaneAppender appender(d);
  run.for_each_span([&](const probes::CompactSpan& s) { appender.add(s); }, kinds, -1, d.last_rowid, window);
  sortNewSpans(d, appender, run);
  orderLanes(d);
  if (detail_only) renumberFlowLanes(d, lanes_before);  // else pairFlows pairs them all again
  // A new span can move every row of its lane after it (a deeper nesting moves the
  // asynchronous rows down), so rows and their summaries are made again: one pass.
  if (!detail_only) {
    // A job stopped or failed while ranks waited ends then, not at its last event: what
    // was still open is drawn up to the stop (schema 13).
    if (!d.lanes.empty()) d.end_ns = std::max(d.end_ns, run.run().unfinished_end_ns());
    findOpenOps(d);
  }
  for (TimelineLane& l : d.lanes) {
    assignRows(l);
    summarizeBlocks(l, 0);
  }
  pairFlows(d, detail_only);
  std::sort(d.iterations.begin() + static_cast<std::ptrdiff_t>(old_iterations), d.iterations.end());
  std::inplace_merge(d.iterations.begin(), d.iterations.begin() + static_cast<std::ptrdiff_t>(old_iterations),
                     d.iterations.end());
}

}  // namespace

TimelineData loadTimeline(probes::RunStoreReader& run) {
  TimelineData d;
  extendTimeline(d, run);
  return d;
}

TimelineData loadTimelineStructure(probes::RunStoreReader& run) {
  TimelineData d;
  appendSpans(d, run, kindsWhere(false), {});
  d.has_detail = false;
  // A finished run's open ops and flows are final: what found them goes (a 100M-span
  // run's allreduces held 290 MB of it, copied again with each window's detail).
  std::set<std::tuple<int, int32_t, int64_t>>().swap(d.finished_ops);
  std::vector<FlowEnd>().swap(d.flow_ends);
  return d;
}

TimelineData withDetail(const TimelineData& structure, probes::RunStoreReader& run, probes::TimeWindow window) {
  TimelineData d = structure;
  // Every span is older than the structure's last one: the detail is read from the start.
  const int64_t last_rowid = d.last_rowid;
  d.last_rowid = 0;
  appendSpans(d, run, kindsWhere(true), window, true);
  std::vector<FlowEnd>().swap(d.flow_ends);  // paired: the window's launches and their GPU work
  d.last_rowid = std::max(last_rowid, d.last_rowid);
  d.has_detail = true;
  d.detail_window = window;
  return d;
}

void extendTimeline(TimelineData& d, probes::RunStoreReader& run) { appendSpans(d, run, {}, {}); }

void markExposed(TimelineData& data, const probes::RunAnalysis& analysis) {
  // On the rank's compute lane (its first lane when it has none): a band on every lane
  // of the rank (RPC pools, comm threads) would only repeat it.
  std::map<int, size_t> band_lane;
  for (size_t i = 0; i < data.lanes.size(); ++i) {
    const bool compute = data.lanes[i].label.size() >= 7 &&
                         data.lanes[i].label.compare(data.lanes[i].label.size() - 7, 7, "compute") == 0;
    auto [it, inserted] = band_lane.try_emplace(data.lanes[i].rank, i);
    if (compute) it->second = i;
  }
  for (TimelineLane& lane : data.lanes)
    lane.exposed.clear();
  for (const auto& it : analysis.iterations) {
    const auto lane = band_lane.find(it.rank);
    if (lane == band_lane.end()) continue;
    auto& exposed = data.lanes[lane->second].exposed;
    exposed.insert(exposed.end(), it.exposed.begin(), it.exposed.end());
  }
  // By time: the view finds a window's first interval by halving.
  for (TimelineLane& lane : data.lanes) {
    std::sort(lane.exposed.begin(), lane.exposed.end(),
              [](const probes::Interval& a, const probes::Interval& b) { return a.begin < b.begin; });
  }
}

const TimelineSpan* TimelineData::spanAt(size_t lane, int64_t t_ns, int64_t slack_ns, int row) const {
  if (lane >= lanes.size()) return nullptr;
  const TimelineLane& l = lanes[lane];
  if (row >= 0) {
    for (const TimelineSpan& o : l.open) {
      if (o.row == row && o.begin_ns <= t_ns + slack_ns) return &o;
    }
  }
  const auto& spans = l.spans;
  // The last span starting at or before t (+ slack); walk back to one that covers t.
  // Without a row: the latest-starting span covering t, the innermost. With one: spans
  // of a row never overlap, so the latest-starting one of that row is the only one that
  // can cover t (its enclosing spans start earlier: the walk is bounded).
  auto it = std::upper_bound(spans.begin(), spans.end(), t_ns + slack_ns,
                             [](int64_t t, const TimelineSpan& s) { return t < s.begin_ns; });
  int steps = 0;
  const int limit = row >= 0 ? 1 << 20 : 256;
  while (it != spans.begin() && steps++ < limit) {
    --it;
    if (row >= 0 && it->row != row) continue;
    if (it->end_ns + slack_ns >= t_ns) return &*it;
    if (row >= 0) return nullptr;  // this row's latest span before t ended before it
  }
  return nullptr;
}

SpanRef TimelineData::opOverlapping(int rank, int64_t begin_ns, int64_t end_ns) const {
  SpanRef best;
  int64_t best_overlap = -1;
  const auto consider = [&](size_t lane, const TimelineSpan& s, SpanRef::In in, int64_t index) {
    if (s.kind != probes::Kind::PgOp) return;
    const int64_t overlap = std::min(s.end_ns, end_ns) - std::max(s.begin_ns, begin_ns);
    if (overlap > best_overlap) {
      best_overlap = overlap;
      best = {static_cast<int>(lane), index, in};
    }
  };
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    const TimelineLane& l = lanes[lane];
    if (l.rank != rank) continue;
    // Spans by begin: only those starting before the range ends and not before the
    // longest span could reach into it.
    auto it = std::lower_bound(l.spans.begin(), l.spans.end(), begin_ns - l.longest_ns,
                               [](const TimelineSpan& s, int64_t t) { return s.begin_ns < t; });
    for (; it != l.spans.end() && it->begin_ns <= end_ns; ++it)
      consider(lane, *it, SpanRef::In::Spans, it - l.spans.begin());
    for (size_t i = 0; i < l.open.size(); ++i)
      consider(lane, l.open[i], SpanRef::In::Open, static_cast<int64_t>(i));
  }
  return best_overlap >= 0 ? best : SpanRef{};
}

const TimelineSpan* TimelineData::resolve(const SpanRef& ref) const {
  if (!ref.valid() || static_cast<size_t>(ref.lane) >= lanes.size()) return nullptr;
  const TimelineLane& l = lanes[static_cast<size_t>(ref.lane)];
  const auto& v = ref.in == SpanRef::In::Spans ? l.spans : ref.in == SpanRef::In::Instants ? l.instants : l.open;
  return static_cast<size_t>(ref.index) < v.size() ? &v[static_cast<size_t>(ref.index)] : nullptr;
}

SpanRef TimelineData::refOf(size_t lane, const TimelineSpan* span) const {
  if (!span || lane >= lanes.size()) return {};
  const TimelineLane& l = lanes[lane];
  for (auto [v, in] : {std::pair{&l.spans, SpanRef::In::Spans}, std::pair{&l.instants, SpanRef::In::Instants},
                       std::pair{&l.open, SpanRef::In::Open}}) {
    if (!v->empty() && span >= v->data() && span < v->data() + v->size())
      return {static_cast<int>(lane), span - v->data(), in};
  }
  return {};
}

}  // namespace ddpscope::gui
