#include "hang_analysis.h"

#include "hang_processes.h"
#include "hang_stacks.h"

#include "rank_attendance.h"

#include <tuple>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ddpscope/error.h"
#include "ddpscope/plural.h"

namespace ddpscope::probes {
namespace {

// Tenths of a second, and milliseconds under one: a wait of 40 ms read "since 0 s".
std::string seconds_text(int64_t ns) {
  if (ns < 1'000'000'000) return detail::concat(std::max<int64_t>(0, ns) / 1'000'000, " ms");
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

// The rank's last completed iteration (a scan without names: ~0.1 s for 1M spans).
std::optional<CompactSpan> last_iteration(RunStoreReader& run, int rank) {
  std::optional<CompactSpan> last;
  run.for_each_span(
      [&](const CompactSpan& s) {
        if (!last || s.iteration > last->iteration) last = s;
      },
      {Kind::Iteration}, rank);
  return last;
}

// The kinds the hang analysis reads of a rank's last iteration: the rest (kernels, ops,
// runtime calls) only name its last event, which is noted as they stream past, so memory
// follows the spans kept, not the spans in the run.
bool kept_for_hang(Kind k) {
  switch (k) {
    case Kind::PgOp:
    case Kind::PgOpStart:
    case Kind::Forward:
    case Kind::Backward:
    case Kind::Finalize:
    case Kind::Optimizer:
    case Kind::GradReady:
    case Kind::BucketReady:
    case Kind::Allreduce:
    case Kind::CollectiveFailed: return true;
    default: return false;
  }
}

// A rank's spans from `from_ns` on (its tail), without their strings (name_id indexes names).
struct RankTail {
  std::vector<CompactSpan> kept;
  const std::vector<std::string>& names;
  const std::string& name(const CompactSpan& c) const {
    static const std::string none;
    return c.name_id >= 0 && static_cast<size_t>(c.name_id) < names.size() ? names[c.name_id] : none;
  }
};

// The latest collective number and event, and the collective the rank is blocked in: one
// started and not finished, in the iteration it was issued in (spans of that iteration
// may have ended since, as an error unwound). Returns when it blocked, or -1.
int64_t find_blocking_collective(const RankTail& spans, RankHangState& st) {
  // By name, not name id: the names table keys a name by its call site too, and a
  // collective's start and end are recorded at different ones.
  std::set<std::pair<std::string, int64_t>> finished_ops;
  for (const CompactSpan& e : spans.kept) {
    if (e.kind == Kind::PgOp) finished_ops.insert({spans.name(e), e.seq});
    if (e.kind == Kind::PgOpStart || e.kind == Kind::PgOp) st.latest_seq = std::max(st.latest_seq, e.seq);
  }
  // With several open (DDP's bucket allreduces are asynchronous) the rank waits in the
  // first it issued: a backend runs a group's collectives in order, so the later ones
  // queue behind it, and the first is the one another rank never entered.
  int64_t blocked_at = -1;
  for (const CompactSpan& e : spans.kept) {
    if (e.kind == Kind::PgOpStart && !finished_ops.count({spans.name(e), e.seq}) &&
        (!st.blocked_in || std::tie(e.t_begin_ns, e.seq) < std::tie(blocked_at, st.blocked_in->seq))) {
      st.blocked_in = PendingCollective{spans.name(e), e.seq, e.bytes, e.t_begin_ns};
      st.current_iteration = e.iteration;
      blocked_at = e.t_begin_ns;
    }
  }
  return blocked_at;
}

// What the current iteration got done before the rank blocked (blocked_at < 0: so far).
struct IterationProgress {
  std::set<int64_t> grads_ready, buckets_ready, buckets_reduced;
  bool forward_done = false, backward_done = false, started = false;
  HangPhase inside = HangPhase::None;  // the phase a blocked rank was in when it blocked

  // A phase the rank was inside when it blocked: that is where it waits.
  void note_inside(Kind kind) {
    if (kind == Kind::Finalize)
      inside = HangPhase::InFinalize;
    else if (kind == Kind::Backward && inside == HangPhase::None)
      inside = HangPhase::InBackward;
    else if (kind == Kind::Forward && inside == HangPhase::None)
      inside = HangPhase::InForward;
    else if (kind == Kind::Optimizer && inside == HangPhase::None)
      inside = HangPhase::InOptimizer;
  }
};

IterationProgress iteration_progress(const RankTail& spans, int64_t iteration, int64_t blocked_at) {
  IterationProgress p;
  for (const CompactSpan& e : spans.kept) {
    if (e.iteration != iteration) continue;
    p.started = true;
    // What ended after the blocked op began ended because the wait failed, not because
    // the work was done.
    if (blocked_at >= 0 && e.kind != Kind::GradReady && e.kind != Kind::BucketReady && e.t_end_ns > blocked_at) {
      if (e.t_begin_ns <= blocked_at) p.note_inside(e.kind);
      continue;
    }
    switch (e.kind) {
      case Kind::Forward: p.forward_done = true; break;
      case Kind::Backward: p.backward_done = true; break;
      case Kind::GradReady: p.grads_ready.insert(e.param); break;
      case Kind::BucketReady: p.buckets_ready.insert(e.bucket); break;
      case Kind::Allreduce: p.buckets_reduced.insert(e.bucket); break;
      default: break;
    }
  }
  return p;
}

// The buckets and gradients still pending, in the bucket assignment in force (the
// latest generation this rank recorded).
void list_pending(RunStoreReader& run, int rank, const IterationProgress& p, bool between, RankHangState& st) {
  const auto buckets = run.buckets(rank);
  int generation = -1;
  for (const auto& b : buckets)
    generation = std::max(generation, b.generation);
  for (const auto& b : buckets) {
    if (b.generation != generation) continue;
    if (between || p.buckets_reduced.count(b.bucket)) continue;
    (p.buckets_ready.count(b.bucket) ? st.buckets_waiting_for_allreduce : st.buckets_waiting_for_grads)
        .push_back(b.bucket);
  }
  for (const auto& param : run.params(rank, generation)) {
    ++st.params_total;
    if (!between && !p.grads_ready.count(param.index)) st.missing_grads.push_back(param.name);
  }
}

RankHangState rank_state(RunStoreReader& run, const std::vector<std::string>& names, int rank,
                         int64_t total_iterations) {
  RankHangState st;
  st.rank = rank;
  const std::optional<CompactSpan> last = last_iteration(run, rank);
  st.completed_iterations = last ? last->iteration : 0;
  st.current_iteration = st.completed_iterations + 1;
  // From the start of the last completed iteration: its collectives give the latest
  // sequence number even when the current iteration has not issued one yet.
  TimeWindow window;
  if (last) window.begin_ns = last->t_begin_ns;
  RankTail spans{{}, names};
  bool any = false;
  CompactSpan latest;
  run.for_each_span(
      [&](const CompactSpan& c) {
        if (!any || c.t_end_ns >= latest.t_end_ns) latest = c, any = true;
        if (kept_for_hang(c.kind)) spans.kept.push_back(c);
      },
      {}, rank, 0, window);
  if (any) {
    st.last_event_ns = latest.t_end_ns;
    st.last_event =
        latest.kind == Kind::CollectiveFailed
            ? detail::concat(spans.name(latest), " #", latest.seq, latest.param == 1 ? " timed out" : " failed")
            : detail::concat(kind_name(latest.kind), " '", spans.name(latest), "'");
  }
  for (const CompactSpan& e : spans.kept)
    if (e.kind == Kind::CollectiveFailed && !st.failed_in) st.failed_in = {spans.name(e), e.seq, e.param == 1};
  const int64_t blocked_at = find_blocking_collective(spans, st);
  const IterationProgress p = iteration_progress(spans, st.current_iteration, blocked_at);
  st.phase = p.inside != HangPhase::None ? p.inside
             : p.backward_done           ? HangPhase::AfterBackward
             : p.forward_done            ? HangPhase::AfterForward
                                         : HangPhase::Forward;
  // Nothing of the next iteration yet: the rank is between iterations (or done), and
  // no gradient or bucket of it is pending.
  const bool between = !st.blocked_in && !p.started && last.has_value();
  if (between) {
    const bool done = st.completed_iterations >= total_iterations;
    st.phase = done ? HangPhase::Done : HangPhase::BetweenIterations;
    if (done) st.current_iteration = st.completed_iterations;
  }
  list_pending(run, rank, p, between, st);
  return st;
}

// Where a rank stands, for the verdict: "in iteration 20 (after forward), last event
// 'injected stall' at 12.4 s".
std::string position_text(const RankHangState& st, int64_t start_ns) {
  // A rank that reached the collector and recorded nothing since: still setting up.
  if (st.last_event.empty()) return "still setting up: it has recorded no event";
  const int64_t at_ns = st.last_event_ns - start_ns;
  char at[32];
  if (at_ns < 1'000'000'000) {
    std::snprintf(at, sizeof at, "%.0f ms", static_cast<double>(at_ns) / 1e6);
  } else {
    std::snprintf(at, sizeof at, "%.1f s", static_cast<double>(at_ns) / 1e9);
  }
  if (st.current_iteration == 0 && st.completed_iterations == 0)
    return detail::concat("at its last event, ", st.last_event, " at ", at, " into the run (no iterations recorded)");
  return detail::concat("in iteration ", st.current_iteration, " (", hang_phase_words(st.phase), "), last event ",
                        st.last_event, " at ", at, " into the run");
}

std::string first_sentence(const std::string& text) {
  // The launcher appends mpirun's words about a dead rank: the verdict names it already.
  const size_t end = std::min(text.find(". "), text.find(" (mpirun: "));
  std::string s = end == std::string::npos ? text : text.substr(0, end);
  while (!s.empty() && (s.back() == '.' || s.back() == ' '))
    s.pop_back();
  constexpr size_t kMax = 200;
  return s.size() > kMax ? s.substr(0, kMax) + "..." : s;
}

// Ranks blocked in the same collective number but different collectives (op or size):
// they called collectives in a different order, or one ran out of iterations and went on
// to what follows the loop. Culprits: the ranks behind in iterations, else the minority.
std::string mismatch_verdict(const HangReport& report, std::vector<int>& culprits) {
  std::map<int64_t, std::vector<const RankHangState*>> by_seq;
  for (const auto& st : report.ranks)
    if (st.blocked_in) by_seq[st.blocked_in->seq].push_back(&st);
  for (const auto& [seq, ranks] : by_seq) {
    // A size not known (an op known only from a timeout message) matches any.
    const auto same_call = [](const RankHangState* a, const RankHangState* b) {
      const int64_t x = a->blocked_in->bytes, y = b->blocked_in->bytes;
      return a->blocked_in->op == b->blocked_in->op && (x == y || x < 0 || y < 0);
    };
    if (std::all_of(ranks.begin(), ranks.end(), [&](auto* st) { return same_call(st, ranks.front()); })) continue;
    std::string text = detail::concat("Ranks called different collectives as #", seq, ":");
    int64_t lowest = std::numeric_limits<int64_t>::max(), highest = 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const RankHangState& st = *ranks[i];
      const int64_t bytes = st.blocked_in->bytes;
      text += detail::concat(i ? ", rank " : " rank ", st.rank, " ", st.blocked_in->op,
                             bytes >= 0 ? " (" + bytes_text(bytes) + ")" : std::string(), " in iteration ",
                             st.current_iteration);
      lowest = std::min(lowest, st.current_iteration);
      highest = std::max(highest, st.current_iteration);
    }
    culprits.clear();
    if (lowest < highest) {
      std::vector<int> ahead;
      for (auto* st : ranks)
        (st->current_iteration == lowest ? culprits : ahead).push_back(st->rank);
      text += detail::concat(". Rank", culprits.size() > 1 ? "s " : " ", list_text(culprits), " stopped at iteration ",
                             lowest, " while rank", ahead.size() > 1 ? "s " : " ", list_text(ahead),
                             " went on to iteration ", highest,
                             ": ranks with uneven inputs (fewer batches) leave the loop early; train under "
                             "DDP's join (--join), or give every rank the same number of batches.");
    } else {
      for (auto* st : ranks) {
        const auto n = std::count_if(ranks.begin(), ranks.end(), [&](auto* o) { return same_call(st, o); });
        if (2 * n < static_cast<long>(ranks.size())) culprits.push_back(st->rank);
      }
      text +=
          ". Every rank must call the same collectives in the same order; DDPSCOPE_DEBUG=detail checks "
          "each call and names both sides.";
    }
    return text;
  }
  return {};
}

// The collective the run's failure ended, as the failing rank typed it (schema 16), when its
// wait ran out of time: {allreduce, 1454}.
std::optional<PendingCollective> collective_of_timeout(const RunRow& run) {
  if (run.status != "failed" || !run.failed.known() || !run.failed.timed_out) return std::nullopt;
  return PendingCollective{run.failed.op, run.failed.seq, -1, 0};
}

// The collective a rank recorded timing out in (a PyTorch rank's collective_failed instant).
std::optional<PendingCollective> timed_out_in(const RankHangState& st) {
  if (!st.failed_in || !st.failed_in->timed_out) return std::nullopt;
  return PendingCollective{st.failed_in->op, st.failed_in->seq, -1, 0};
}

const RankHangState* state_of(const HangReport& report, int rank) {
  for (const auto& st : report.ranks)
    if (st.rank == rank) return &st;
  return nullptr;
}

// "; rank 1 was in iteration 20 (...)" for each of `ranks` the report holds.
std::string positions_text(const HangReport& report, const std::vector<int>& ranks, int64_t start_ns) {
  std::string text;
  for (int r : ranks) {
    if (const RankHangState* a = state_of(report, r))
      text += detail::concat("; rank ", r, " was ", position_text(*a, start_ns));
  }
  return text;
}

std::string dead_rank_verdict(HangReport& report, int64_t start_ns) {
  report.culprits = {report.dead_rank};
  const int rank = report.dead_rank;
  std::string culprit = detail::concat("Rank ", rank, " died by ", report.dead_signal);
  if (const RankHangState* st = state_of(report, rank)) culprit += detail::concat(" ", position_text(*st, start_ns));
  std::vector<int> waiting;
  for (const auto& st : report.ranks)
    if (st.rank != rank && st.blocked_in) waiting.push_back(st.rank);
  if (!waiting.empty())
    culprit += detail::concat("; ", ranks_named(waiting.size(), list_text(waiting)),
                              waiting.size() == 1 ? " was" : " were", " waiting in a collective");
  return culprit + ".";
}

// The collective that some rank waits in and some other rank never started. A rank that
// timed out in an earlier collective is not absent by choice: it is stuck there, waiting
// for a rank that went on (one stopped once its part of the earlier op was sent, before
// the transfer reached the other: the fault suite met "Rank 0 never entered allreduce
// #2829, which rank 1 waited in" with rank 0's timeout in #2828). The timeout verdict
// names the culprit then.
std::string absent_rank_verdict(HangReport& report, int64_t start_ns, int timed_out_rank) {
  for (const auto& st : report.ranks) {
    if (!st.blocked_in) continue;
    std::vector<int> absent;
    for (const auto& other : report.ranks)
      if (other.rank != st.rank && other.latest_seq < st.blocked_in->seq) absent.push_back(other.rank);
    if (absent.empty() || absent == std::vector<int>{timed_out_rank}) continue;
    report.culprits = absent;
    std::vector<int> waiting;
    for (const auto& w : report.ranks)
      if (w.blocked_in && w.blocked_in->seq == st.blocked_in->seq) waiting.push_back(w.rank);
    return detail::concat("Rank", absent.size() > 1 ? "s " : " ", list_text(absent), " never entered ",
                          st.blocked_in->op, " #", st.blocked_in->seq, ", which rank", waiting.size() > 1 ? "s " : " ",
                          list_text(waiting), " waited in") +
           positions_text(report, absent, start_ns) + ".";
  }
  return {};
}

// Every rank entered the same collective and it never completed; one rank's watchdog
// reported it. The others never reported a timeout of their own: stopped, or stuck
// inside the transfer. They are the likely culprits.
std::string timed_out_verdict(HangReport& report, const RunRow& run, int64_t start_ns) {
  const RankHangState* reporter_state = state_of(report, run.failed_rank);
  // The reporter's start of the op may not have reached the file before the job ended;
  // its typed failure names the op and number (allreduce #1454).
  std::optional<PendingCollective> waited = reporter_state ? reporter_state->blocked_in : std::nullopt;
  if (!waited) waited = collective_of_timeout(run);
  if (!waited && reporter_state) waited = timed_out_in(*reporter_state);
  if (!reporter_state || !waited) return {};
  const int64_t seq = waited->seq;
  std::vector<int> silent, absent;
  for (const auto& st : report.ranks) {
    if (st.rank == run.failed_rank) continue;  // it entered: its timeout says so
    // Entered: still in it, or started it (a rank stopped inside it may finish it
    // once continued, its op lasting as long as the stop).
    (st.latest_seq >= seq ? silent : absent).push_back(st.rank);
  }
  if (!absent.empty()) {
    report.culprits = absent;
    return detail::concat("Rank", absent.size() > 1 ? "s " : " ", list_text(absent), " never entered ", waited->op,
                          " #", seq, ", which rank ", run.failed_rank, " waited in") +
           positions_text(report, absent, start_ns) + ".";
  }
  if (silent.empty()) return {};
  report.culprits = silent;
  return detail::concat("Every rank entered ", waited->op, " #", seq, ", and rank ", run.failed_rank,
                        " waited in it until its timeout. Rank", silent.size() > 1 ? "s " : " ", list_text(silent),
                        silent.size() > 1 ? " never timed out themselves" : " never timed out itself",
                        ": stopped, stuck inside the transfer, or cut off from the network (the likely culprit",
                        silent.size() > 1 ? "s" : "", ")") +
         positions_text(report, silent, start_ns) + ".";
}

// Who reported the failure, when that is not the culprit named already; or the failure
// itself, when nothing else names a culprit.
std::string reporter_text(HangReport& report, const RunRow& run, std::string& culprit) {
  if (run.status != "failed") return {};
  const int reported_by = run.failed_rank;
  const bool same = report.culprits.size() == 1 && report.culprits.front() == reported_by;
  // A rank that died is named with its signal already; mpirun's words add nothing.
  if (!culprit.empty() && reported_by >= 0 && reported_by == report.dead_rank) return {};
  if (!culprit.empty() && reported_by >= 0 && !same)
    return detail::concat(" Rank ", reported_by, " reported it: ", first_sentence(run.message), ".");
  if (!culprit.empty() && same && report.dead_rank < 0)
    return detail::concat(" It failed: ", first_sentence(run.message), ".");
  if (culprit.empty() && reported_by >= 0) {
    culprit = detail::concat("Rank ", reported_by, " failed: ", first_sentence(run.message), ".");
    report.culprits = {reported_by};
  }
  return {};
}

// From the flight recorder's records alone; a failure they do not explain (an error in
// the training code, a rank that died outside any collective) is named by who reported it.
void add_records_verdict(HangReport& report, const RunRow& run, int64_t start_ns) {
  report.flight = analyze_flight(report.records, report.dead_rank, report.dead_signal,
                                 run.status == "running" ? std::max(report.now_ns, report.latest_event_ns) : 0);
  report.records = records_at_failure(std::move(report.records));  // as the verdict saw them (the grid)
  std::string culprit = report.flight.verdict;
  report.culprits = report.flight.culprits;
  // What the culprits were doing, from their latest events (a rank with none shipped,
  // killed before its first batch, has no position to give).
  for (size_t i = 0; i < std::min<size_t>(report.culprits.size(), 3); ++i) {
    const RankHangState* st = state_of(report, report.culprits[i]);
    // (Not for a run without iterations, such as imported dumps: no step to be in.)
    if (st && !st->last_event.empty() && (st->current_iteration > 0 || st->completed_iterations > 0))
      culprit += detail::concat(" Rank ", st->rank, " was ", position_text(*st, start_ns), ".");
  }
  if (culprit.empty() && report.dead_rank >= 0) {
    culprit = detail::concat("Rank ", report.dead_rank, " died by ", report.dead_signal,
                             "; every collective it called matched the other ranks'.");
    report.culprits = {report.dead_rank};
  }
  const std::string reporter = reporter_text(report, run, culprit);
  report.verdict = culprit + reporter;
  if (!report.verdict.empty()) report.findings.insert(report.findings.begin(), report.verdict);
}

// A rank that aborted (signal 6) while it waited in a collective another rank never
// entered died of that wait: its backend's timeout raised on a thread of its own and ended
// the process (gloo does: "terminate called after throwing an instance of
// 'gloo::IoException'"). The absent rank is the culprit then. Any other signal came from
// outside (a kill, a crash) and names the dead rank.
bool died_of_its_wait(const HangReport& report) {
  if (report.dead_signal.rfind("signal 6", 0) != 0) return false;
  const RankHangState* dead = state_of(report, report.dead_rank);
  if (!dead) return false;
  if (dead->blocked_in) return true;
  // Or its wait had already ended in the timeout, as it recorded (a torch rank's
  // collective_failed instant), and the abort came after it.
  return timed_out_in(*dead).has_value();
}

void add_verdict(HangReport& report, const RunRow& run, int64_t start_ns) {
  if (report.from_records()) return add_records_verdict(report, run, start_ns);
  std::string culprit;
  const bool waited_to_death = report.dead_rank >= 0 && died_of_its_wait(report);
  if (waited_to_death) {
    culprit = absent_rank_verdict(report, start_ns, -1);
    // Every rank entered: the one that never timed out is the one the others waited for.
    if (culprit.empty() && run.status == "failed" && run.failed_rank >= 0 && report.ranks.size() > 1)
      culprit = timed_out_verdict(report, run, start_ns);
    if (!culprit.empty()) {
      culprit.pop_back();  // its full stop
      culprit += detail::concat("; rank ", report.dead_rank, " then died by ", report.dead_signal,
                                " when its wait timed out.");
    }
  }
  if (!culprit.empty()) {
    // the absent rank, or the one that never timed out, named above
  } else if (report.dead_rank >= 0) {
    culprit = dead_rank_verdict(report, start_ns);
  } else {
    const bool timed_out = collective_of_timeout(run).has_value();
    culprit = absent_rank_verdict(report, start_ns, timed_out ? run.failed_rank : -1);
    if (culprit.empty()) culprit = mismatch_verdict(report, report.culprits);
  }
  if (culprit.empty() && run.status == "failed" && run.failed_rank >= 0 && report.ranks.size() > 1)
    culprit = timed_out_verdict(report, run, start_ns);
  const std::string reporter = reporter_text(report, run, culprit);
  report.verdict = culprit + reporter;
  if (!report.verdict.empty()) report.findings.insert(report.findings.begin(), report.verdict);
}

}  // namespace

namespace {

// A run that records no iteration count (a PyTorch script's) and finished with no rank
// waiting in a collective: its ranks between iterations are done. A trace that ends with
// a rank still waiting (an imported hang) keeps them between iterations.
void mark_done_when_finished(const RunRow& run, HangReport& report) {
  if (run.status != "finished") return;
  for (const auto& st : report.ranks)
    if (st.blocked_in) return;
  for (auto& st : report.ranks) {
    if (st.phase != HangPhase::BetweenIterations) continue;
    st.phase = HangPhase::Done;
    st.current_iteration = st.completed_iterations;
  }
}

// The job's iteration count, to tell "done" from "between iterations"; int64 max when
// the run's config does not say.
int64_t iteration_count(const RunRow& run) {
  int64_t total_iterations = std::numeric_limits<int64_t>::max();
  try {
    const auto config = nlohmann::json::parse(run.config_json);
    total_iterations = config.value("iters", total_iterations);
  } catch (const nlohmann::json::exception&) {
    // not recorded: see mark_done_when_finished
  }
  return total_iterations;
}

// A rank whose watchdog fired ends the job at once, so its own start of the op it
// waited in may never have been shipped; its typed failure names that op. Without
// this, a stopped rank whose start did reach the file looked like the one waiting and
// the reporter like the one that never entered.
void take_typed_timeout(const RunRow& run, HangReport& report) {
  if (run.status != "failed" || run.failed_rank < 0 || report.from_records()) return;
  const std::optional<PendingCollective> waited = collective_of_timeout(run);
  for (auto& st : report.ranks) {
    if (st.rank != run.failed_rank || !waited || waited->seq <= st.latest_seq) continue;
    st.latest_seq = waited->seq;
    st.blocked_in = PendingCollective{waited->op, waited->seq, -1, st.last_event_ns};
  }
}

// "is in iteration 3 (backward)", or for a rank with no iterations recorded (a dump's),
// what it was in.
std::string where_text(const RankHangState& st) {
  if (st.current_iteration > 0 || st.completed_iterations > 0)
    return detail::concat("is in iteration ", st.current_iteration, " (", hang_phase_words(st.phase), ")");
  return "has no iterations recorded";
}

// A finding per rank waiting in a collective: which, since when, and who has not started it.
void add_waiting_findings(HangReport& report) {
  auto& f = report.findings;
  for (const auto& st : report.ranks) {
    if (!st.blocked_in) continue;
    const auto& c = *st.blocked_in;
    std::vector<int> behind;
    for (const auto& other : report.ranks) {
      if (other.rank != st.rank && other.latest_seq < c.seq) behind.push_back(other.rank);
    }
    const std::string not_started = behind.empty()
                                        ? std::string("")
                                        : detail::concat("; ", ranks_named(behind.size(), list_text(behind)),
                                                         behind.size() == 1 ? " has" : " have", " not started it");
    if (st.rank == report.dead_rank) {  // the dead wait no more: how long it waited, then
      f.push_back(detail::concat("rank ", st.rank, " waited in ", c.op, " #", c.seq, " (", bytes_text(c.bytes),
                                 ") for ", seconds_text(st.last_event_ns - c.started_ns), ", then died by ",
                                 report.dead_signal, not_started));
      continue;
    }
    f.push_back(detail::concat("rank ", st.rank, " waits in ", c.op, " #", c.seq, " (", bytes_text(c.bytes), ")",
                               report.ages_known ? " since " + seconds_text(report.now_ns - c.started_ns)
                                                 : std::string(": the dumps do not say for how long"),
                               not_started));
  }
}

// A finding per rank behind the others' latest collective, or silent for 2 s or more
// while not waiting in one.
void add_stalled_findings(HangReport& report, int64_t top_seq) {
  for (const auto& st : report.ranks) {
    const bool behind = st.latest_seq < top_seq && !st.blocked_in;
    if (!behind && st.blocked_in) continue;
    if (!behind && (!report.ages_known || report.now_ns - st.last_event_ns < 2'000'000'000)) continue;
    std::string line = detail::concat("rank ", st.rank, " ", where_text(st));
    if (report.ages_known) line += detail::concat(": no event for ", seconds_text(report.now_ns - st.last_event_ns));
    line += detail::concat(" (last: ", st.last_event, ")");
    if (st.params_total > 0) {
      line += detail::concat("; ", st.missing_grads.size(), " of ", st.params_total, " gradients have not arrived");
    }
    if (behind)
      line +=
          st.latest_seq < 0
              ? detail::concat("; it started no collective in its last two iterations, the others are at #", top_seq)
              : detail::concat("; its latest collective is #", st.latest_seq, ", the others are at #", top_seq);
    report.findings.push_back(line);
  }
}

// With nothing found: every rank finished, or none is stuck yet. A run that holds fewer
// ranks than its job had (2 ranks' traces of a 128-rank job) speaks for those only.
void add_quiet_finding(HangReport& report, int world_size) {
  auto& f = report.findings;
  const bool all_done =
      !report.ranks.empty() && std::all_of(report.ranks.begin(), report.ranks.end(),
                                           [](const RankHangState& s) { return s.phase == HangPhase::Done; });
  const auto held = static_cast<int64_t>(report.ranks.size());
  if (f.empty() && all_done && world_size > held) {
    f.push_back(detail::concat("the ", count_of(held, "rank"), " this run holds (of the job's ", world_size,
                               ") finished their ", count_of(report.ranks.front().completed_iterations, "iteration"),
                               "; nothing is pending among them, and of the other ", world_size - held,
                               " ranks it knows nothing"));
  } else if (f.empty() && all_done) {
    f.push_back(detail::concat("every rank finished its ",
                               count_of(report.ranks.front().completed_iterations, "iteration"),
                               "; nothing is pending"));
  } else if (f.empty()) {
    f.push_back(
        "no rank is waiting in a collective, and every rank's latest event is less than 2 s "
        "old");
  }
}

}  // namespace

namespace {

// Dumps that lack a rank's: the verdict rests on the others' records, and says so.
void add_no_dump_finding(HangReport& report, const std::vector<int>& absent) {
  if (absent.empty()) return;
  report.findings.push_back(detail::concat("no dump of rank", absent.size() > 1 ? "s " : " ", rank_ranges_text(absent),
                                           ": the verdict knows only what the other ranks recorded"));
}

}  // namespace

HangReport analyze_hang(RunStoreReader& run, int64_t now_ns) {
  HangReport report;
  const RunRow run_row = run.run();
  const int64_t total_iterations = iteration_count(run_row);
  const std::vector<std::string> names = run.names();
  for (const auto& r : run.ranks()) {
    report.ranks.push_back(rank_state(run, names, r.rank, total_iterations));
    report.latest_event_ns = std::max(report.latest_event_ns, report.ranks.back().last_event_ns);
  }
  if (total_iterations == std::numeric_limits<int64_t>::max()) mark_done_when_finished(run_row, report);
  // A job stopped (or ended by a timeout) while its ranks waited: they waited until then.
  report.now_ns = now_ns > 0 ? now_ns : std::max(report.latest_event_ns, run_row.unfinished_end_ns());
  report.start_ns = run.time_range().first;
  // Files older than schema 6 record no dead rank: their message's words are not read.
  if (run_row.schema >= 6) {
    report.records = run.flight();
    report.dead_rank = run_row.dead_rank;
    report.dead_signal = run_row.dead_signal;
  }
  take_typed_timeout(run_row, report);
  // Only PyTorch's own dumps ("torch"): no clock of the job's to measure waits against.
  bool only_torch_dumps = !report.records.empty();
  for (const auto& [rank, rows] : report.records.by_rank)
    for (const auto& row : rows)
      only_torch_dumps = only_torch_dumps && row.source == "torch";
  report.ages_known = now_ns > 0 || !only_torch_dumps;
  // The dumps record collectives, not iterations: no rank is "in iteration 1 (forward)".
  if (only_torch_dumps)
    for (auto& st : report.ranks)
      if (st.completed_iterations == 0) st.current_iteration = 0, st.phase = HangPhase::None;
  int64_t top_seq = -1;
  for (const auto& st : report.ranks)
    top_seq = std::max(top_seq, st.latest_seq);
  add_waiting_findings(report);
  add_stalled_findings(report, top_seq);
  add_quiet_finding(report, run_row.world_size);
  add_verdict(report, run_row, run.time_range().first);
  report.stacks = latest_stacks(run.stacks());
  if (const std::string code = stacks_sentences(report); !code.empty() && !report.verdict.empty()) {
    report.verdict += " " + code;
    report.findings.front() = report.verdict;
  }
  add_flight_record_stacks(report);
  // A run made of PyTorch's dumps alone (imported): the ranks whose dump is missing.
  if (only_torch_dumps) add_no_dump_finding(report, report.records.ranks_without_records());
  // A job that is over: the ranks its launcher saw stopped when it ended the job.
  if (run_row.status != "running") add_ranks_stopped_at_the_end(report, run.ranks());
  // Ranks that never joined, joined late, or ran again: after the verdict, before the rest.
  const auto attendance = attendance_findings(rank_attendance(run));
  report.findings.insert(report.findings.begin() + (report.verdict.empty() ? 0 : 1), attendance.begin(),
                         attendance.end());
  return report;
}

HangReport analyze_hang(FlightData records) {
  HangReport report;
  report.flight = analyze_flight(records);
  const std::vector<int> absent = records.ranks_without_records();
  report.records = records_at_failure(std::move(records));
  report.verdict = report.flight.verdict;
  report.culprits = report.flight.culprits;
  if (!report.verdict.empty()) report.findings.push_back(report.verdict);
  for (const GroupFinding& g : report.flight.groups)
    if (g.verdict.empty() && g.seq >= 0)
      report.findings.push_back(g.p2p ? detail::concat("group '", g.group, "': every send had its receive, alike")
                                      : detail::concat("group '", g.group, "': every rank called collectives #",
                                                       std::max<int64_t>(g.first_seq, 0), "..#", g.seq,
                                                       " alike and completed them"));
  add_no_dump_finding(report, absent);
  add_flight_record_stacks(report);
  return report;
}

const char* hang_phase_words(HangPhase phase) {
  switch (phase) {
    case HangPhase::None: return "";
    case HangPhase::Forward: return "forward";
    case HangPhase::AfterForward: return "after forward";
    case HangPhase::InForward: return "in forward";
    case HangPhase::InBackward: return "in backward";
    case HangPhase::InFinalize: return "in backward (finalize: waiting for buckets)";
    case HangPhase::AfterBackward: return "after backward";
    case HangPhase::InOptimizer: return "in the optimizer step";
    case HangPhase::BetweenIterations: return "between iterations";
    case HangPhase::Done: return "done";
  }
  return "";
}

}  // namespace ddpscope::probes
