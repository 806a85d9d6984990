#include "hang_analysis.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tensor/error.h"

namespace ddpscope::probes {
namespace {

std::string seconds_text(int64_t ns) {
  return detail::concat(static_cast<double>(ns / 100000000) / 10.0, " s");
}

std::string bytes_text(int64_t bytes) {
  if (bytes < 0) return "?";
  if (bytes >= (int64_t{1} << 20)) return detail::concat(bytes / (int64_t{1} << 20), " MiB");
  if (bytes >= 1024) return detail::concat(bytes / 1024, " KiB");
  return detail::concat(bytes, " B");
}

std::string list_text(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + std::to_string(v[i]);
  return out;
}

RankHangState rank_state(RunStoreReader& run, int rank, int64_t total_iterations) {
  RankHangState st;
  st.rank = rank;
  // The last completed iteration (a scan without names: ~0.1 s for 1M spans).
  std::optional<CompactSpan> last;
  run.for_each_span(
      [&](const CompactSpan& s) {
        if (!last || s.iteration > last->iteration) last = s;
      },
      {Kind::Iteration}, rank);
  st.completed_iterations = last ? last->iteration : 0;
  st.current_iteration = st.completed_iterations + 1;
  // From the start of the last completed iteration: its collectives give the latest
  // sequence number even when the current iteration has not issued one yet.
  SpanQuery window;
  window.rank = rank;
  if (last) window.t_begin_ns = last->t_begin_ns;
  const auto events = run.spans(window);

  // A collective started and not finished: the rank is blocked in it, in the iteration
  // it was issued in (spans of that iteration may have ended since, as an error unwound).
  std::set<std::pair<std::string, int64_t>> finished_ops;
  for (const SpanRow& e : events) {
    if (e.kind == Kind::PgOp) finished_ops.insert({e.name, e.seq});
    if (e.kind == Kind::PgOpStart || e.kind == Kind::PgOp) {
      st.latest_seq = std::max(st.latest_seq, e.seq);
    }
    if (e.t_end_ns >= st.last_event_ns) {
      st.last_event_ns = e.t_end_ns;
      st.last_event = detail::concat(kind_name(e.kind), " '", e.name, "'");
    }
  }
  int64_t blocked_at = -1;
  for (const SpanRow& e : events) {
    if (e.kind == Kind::PgOpStart && !finished_ops.count({e.name, e.seq})) {
      st.blocked_in = PendingCollective{e.name, e.seq, e.bytes, e.t_begin_ns};
      st.current_iteration = e.iteration;
      blocked_at = e.t_begin_ns;
    }
  }
  std::set<int64_t> grads_ready, buckets_ready, buckets_reduced;
  bool forward_done = false, backward_done = false, started = false;
  for (const SpanRow& e : events) {
    if (e.iteration != st.current_iteration) continue;
    started = true;
    // What ended after the blocked op began ended because the wait failed, not because
    // the work was done.
    if (blocked_at >= 0 && e.kind != Kind::GradReady && e.kind != Kind::BucketReady &&
        e.t_end_ns > blocked_at) {
      continue;
    }
    switch (e.kind) {
      case Kind::Forward:
        forward_done = true;
        break;
      case Kind::Backward:
        backward_done = true;
        break;
      case Kind::GradReady:
        grads_ready.insert(e.param);
        break;
      case Kind::BucketReady:
        buckets_ready.insert(e.bucket);
        break;
      case Kind::Allreduce:
        buckets_reduced.insert(e.bucket);
        break;
      default:
        break;
    }
  }
  st.phase = backward_done ? "after backward" : forward_done ? "after forward" : "forward";
  // Nothing of the next iteration yet: the rank is between iterations (or done), and
  // no gradient or bucket of it is pending.
  const bool between = !st.blocked_in && !started && last.has_value();
  if (between) {
    const bool done = st.completed_iterations >= total_iterations;
    st.phase = done ? "done" : "between iterations";
    if (done) st.current_iteration = st.completed_iterations;
  }

  // The bucket assignment in force: the latest generation this rank recorded.
  const auto buckets = run.buckets(rank);
  int generation = -1;
  for (const auto& b : buckets)
    generation = std::max(generation, b.generation);
  for (const auto& b : buckets) {
    if (b.generation != generation) continue;
    if (between || buckets_reduced.count(b.bucket)) continue;
    (buckets_ready.count(b.bucket) ? st.buckets_waiting_for_allreduce
                                   : st.buckets_waiting_for_grads)
        .push_back(b.bucket);
  }
  for (const auto& p : run.params(rank, generation)) {
    ++st.params_total;
    if (!between && !grads_ready.count(p.index)) st.missing_grads.push_back(p.name);
  }
  return st;
}

}  // namespace

HangReport analyze_hang(RunStoreReader& run, int64_t now_ns) {
  HangReport report;
  // The job's iteration count, to tell "done" from "between iterations".
  int64_t total_iterations = std::numeric_limits<int64_t>::max();
  try {
    const auto config = nlohmann::json::parse(run.run().config_json);
    total_iterations = config.value("iters", total_iterations);
  } catch (const nlohmann::json::exception&) {
    // not recorded: never "done"
  }
  for (const auto& r : run.ranks()) {
    report.ranks.push_back(rank_state(run, r.rank, total_iterations));
    report.latest_event_ns = std::max(report.latest_event_ns, report.ranks.back().last_event_ns);
  }
  report.now_ns = now_ns > 0 ? now_ns : report.latest_event_ns;
  auto& f = report.findings;
  int64_t top_seq = -1;
  for (const auto& st : report.ranks)
    top_seq = std::max(top_seq, st.latest_seq);
  for (const auto& st : report.ranks) {
    if (!st.blocked_in) continue;
    const auto& c = *st.blocked_in;
    std::vector<int> behind;
    for (const auto& other : report.ranks) {
      if (other.rank != st.rank && other.latest_seq < c.seq) behind.push_back(other.rank);
    }
    f.push_back(detail::concat(
        "rank ", st.rank, " waits in ", c.op, " #", c.seq, " (", bytes_text(c.bytes), ") since ",
        seconds_text(report.now_ns - c.started_ns),
        behind.empty() ? std::string("")
                       : detail::concat("; rank(s) ", list_text(behind), " have not started it")));
  }
  for (const auto& st : report.ranks) {
    const bool behind = st.latest_seq < top_seq && !st.blocked_in;
    if (!behind && st.blocked_in) continue;
    if (!behind && report.now_ns - st.last_event_ns < 2'000'000'000) continue;
    std::string line =
        detail::concat("rank ", st.rank, " is in iteration ", st.current_iteration, " (", st.phase,
                       "): no event for ", seconds_text(report.now_ns - st.last_event_ns),
                       " (last: ", st.last_event, ")");
    if (st.params_total > 0) {
      line += detail::concat("; ", st.missing_grads.size(), " of ", st.params_total,
                             " gradients have not arrived");
    }
    if (behind)
      line += detail::concat("; its latest collective is #", st.latest_seq, ", the others are at #",
                             top_seq);
    f.push_back(line);
  }
  const bool all_done = !report.ranks.empty() &&
                        std::all_of(report.ranks.begin(), report.ranks.end(),
                                    [](const RankHangState& s) { return s.phase == "done"; });
  if (f.empty() && all_done) {
    f.push_back(detail::concat("every rank finished its ",
                               report.ranks.front().completed_iterations,
                               " iterations; nothing is pending"));
  } else if (f.empty()) {
    f.push_back(
        "no rank is waiting in a collective, and every rank's latest event is less than 2 s "
        "old");
  }
  return report;
}

}  // namespace ddpscope::probes
