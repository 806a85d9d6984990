#include "run_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "ddpscope/error.h"
#include "collective_bandwidth.h"
#include "overlap_analysis.h"
#include "time_breakdown.h"

namespace ddpscope::probes {
namespace {

// A change smaller than this share of the larger side, or than 1 us, is "same": runs of
// one job differ by that much from noise alone.
constexpr double kSameShare = 0.05;
constexpr double kSameMs = 0.001;

// The parts compared, in the order shown: the JSON key, the text's label, the field.
struct Part {
  const char* key;
  const char* label;
  double CompareSide::*ms;
};
constexpr Part kParts[] = {{"iteration", "iteration", &CompareSide::iteration_ms},
                           {"forward", "  forward", &CompareSide::forward_ms},
                           {"backward_compute", "  backward compute", &CompareSide::backward_ms},
                           {"gpu_computation", "  GPU computation", &CompareSide::gpu_computation_ms},
                           {"exposed_comm", "  exposed communication", &CompareSide::exposed_comm_ms},
                           {"exposed_wait", "    of it waiting for other ranks", &CompareSide::exposed_wait_ms},
                           {"optimizer", "  optimizer", &CompareSide::optimizer_ms},
                           {"idle", "  idle", &CompareSide::idle_ms},
                           {"hidden_comm", "hidden communication", &CompareSide::hidden_comm_ms}};

double bucket_busbw(const RunAnalysis& analysis, int64_t first, int64_t last) {
  BucketBusTotals totals;
  for (const BucketTiming& b : analysis.buckets)
    if (b.iteration >= first && b.iteration <= last) totals.add(b);
  return totals.transfer_ms > 0 ? totals.gbps() : -1;
}

struct OpKey {
  Kind kind;
  std::string name;
  bool operator<(const OpKey& o) const { return std::tie(kind, name) < std::tie(o.kind, o.name); }
};
struct OpTotals {
  double ms = 0;
  double count = 0;
};

struct Side {
  CompareSide summary;
  std::map<OpKey, OpTotals> ops;  // per rank and iteration
};

Side measure(RunStoreReader& run, IterationRange range, const char* which, const RunAnalysis* known) {
  Side side;
  CompareSide& s = side.summary;
  s.path = run.path();
  const RunAnalysis own = known ? RunAnalysis{} : analyze_run(run);
  const RunAnalysis& analysis = known ? *known : own;
  const std::vector<TimeBreakdown> rows = breakdown_by_iteration(analysis);
  int64_t lowest = -1, highest = -1;
  for (const TimeBreakdown& r : rows) {
    lowest = lowest < 0 ? r.iteration : std::min(lowest, r.iteration);
    highest = std::max(highest, r.iteration);
  }
  if (rows.empty()) {
    throw DDPSCOPE_ERROR("compare: run ", which, " ('", run.path(),
                         "') has no finished iteration; compare runs of training jobs that completed at least one");
  }
  // The first iteration builds buckets and warms caches: left out unless asked for.
  s.first_iteration = range.first >= 0 ? range.first : (highest - lowest >= 2 ? lowest + 1 : lowest);
  s.last_iteration = range.last >= 0 ? range.last : highest;
  // Per rank: the window its compared iterations span, for the ops.
  std::map<int, std::pair<int64_t, int64_t>> windows;
  std::map<int, bool> ranks;
  int64_t used = 0;
  for (const auto& it : analysis.iterations) {
    if (it.iteration < s.first_iteration || it.iteration > s.last_iteration) continue;
    auto [w, fresh] = windows.try_emplace(it.rank, it.t_begin_ns, it.t_end_ns);
    if (!fresh) w->second = {std::min(w->second.first, it.t_begin_ns), std::max(w->second.second, it.t_end_ns)};
    if (it.rank == 0 && (s.first_iteration_begin_ns == 0 || it.t_begin_ns < s.first_iteration_begin_ns))
      s.first_iteration_begin_ns = it.t_begin_ns;
  }
  for (const TimeBreakdown& r : rows) {
    if (r.iteration < s.first_iteration || r.iteration > s.last_iteration) continue;
    ranks[r.rank] = true;
    ++used;
    s.iteration_ms += r.iteration_ms;
    s.forward_ms += r.forward_ms;
    s.backward_ms += r.backward_ms;
    s.exposed_comm_ms += r.exposed_comm_ms;
    s.exposed_wait_ms += r.exposed_wait_ms;
    s.optimizer_ms += r.optimizer_ms;
    s.idle_ms += r.idle_ms;
    s.hidden_comm_ms += r.hidden_comm_ms;
    s.gpu = s.gpu || r.gpu;
    s.gpu_computation_ms += r.computation_ms;
  }
  if (used == 0) {
    throw DDPSCOPE_ERROR("compare: run ", which, " ('", run.path(), "') has no finished iteration in ",
                         s.first_iteration, "..", s.last_iteration, "; it holds iterations ", lowest, "..", highest);
  }
  s.ranks = static_cast<int>(ranks.size());
  s.iterations = used / std::max(1, s.ranks);
  for (double* v : {&s.iteration_ms, &s.forward_ms, &s.backward_ms, &s.exposed_comm_ms, &s.optimizer_ms, &s.idle_ms,
                    &s.hidden_comm_ms, &s.gpu_computation_ms, &s.exposed_wait_ms})
    *v /= static_cast<double>(used);
  s.busbw_gbps = bucket_busbw(analysis, s.first_iteration, s.last_iteration);
  // Ops: every span with a duration that starts in its rank's window, by kind and name.
  const std::vector<std::string> names = run.names();
  run.for_each_span([&](const CompactSpan& c) {
    if (c.kind == Kind::Iteration || c.t_end_ns <= c.t_begin_ns) return;
    const auto w = windows.find(c.rank);
    if (w == windows.end() || c.t_begin_ns < w->second.first || c.t_begin_ns > w->second.second) return;
    const std::string& name =
        c.name_id >= 0 && static_cast<size_t>(c.name_id) < names.size() ? names[static_cast<size_t>(c.name_id)] : "?";
    OpTotals& t = side.ops[{c.kind, name}];
    t.ms += static_cast<double>(c.t_end_ns - c.t_begin_ns) / 1e6;
    t.count += 1;
  });
  for (auto& [key, t] : side.ops) {
    t.ms /= static_cast<double>(used);
    t.count /= static_cast<double>(used);
  }
  return side;
}

std::string signed_ms(double ms) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%+.2f ms", ms);
  return buf;
}

std::string headline(const CompareSide& a, const CompareSide& b, const std::vector<OpChange>& ops) {
  const double delta = b.iteration_ms - a.iteration_ms;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "B's iteration is %.2f ms against A's %.2f ms (%s, %+.1f%%).", b.iteration_ms,
                a.iteration_ms, signed_ms(delta).c_str(), a.iteration_ms > 0 ? 100 * delta / a.iteration_ms : 0.0);
  std::string text = buf;
  const std::pair<const char*, double> parts[] = {{"forward", b.forward_ms - a.forward_ms},
                                                  {"backward compute", b.backward_ms - a.backward_ms},
                                                  {"GPU computation", b.gpu_computation_ms - a.gpu_computation_ms},
                                                  {"exposed communication", b.exposed_comm_ms - a.exposed_comm_ms},
                                                  {"optimizer", b.optimizer_ms - a.optimizer_ms},
                                                  {"idle", b.idle_ms - a.idle_ms}};
  const auto most = std::max_element(std::begin(parts), std::end(parts),
                                     [](auto& x, auto& y) { return std::fabs(x.second) < std::fabs(y.second); });
  if (std::fabs(most->second) >= kSameMs) {
    text += " The largest part of the change: " + std::string(most->first) + " " + signed_ms(most->second);
    // Communication that grew because a rank waits longer for another is a slow rank, not a
    // slow network: said with it.
    if (most == &parts[3])
      text += " (waiting for other ranks " + signed_ms(b.exposed_wait_ms - a.exposed_wait_ms) + ", transfer " +
              signed_ms((b.exposed_comm_ms - b.exposed_wait_ms) - (a.exposed_comm_ms - a.exposed_wait_ms)) + ")";
    text += ".";
  }
  if (!ops.empty() && ops.front().change != OpChange::Change::Same) {
    const OpChange& op = ops.front();
    text += " The op that changed most: " + op.name + " (" + kind_name(op.kind) + ", " + change_name(op.change) + ", " +
            signed_ms(op.delta_ms()) + " per rank and iteration).";
  }
  return text;
}

}  // namespace

const char* change_name(OpChange::Change c) {
  switch (c) {
    case OpChange::Change::Appeared: return "appeared";
    case OpChange::Change::Disappeared: return "disappeared";
    case OpChange::Change::Slower: return "slower";
    case OpChange::Change::Faster: return "faster";
    case OpChange::Change::Same: return "same";
  }
  return "?";
}

RunComparison compare_runs(RunStoreReader& a, RunStoreReader& b, IterationRange range_a, IterationRange range_b,
                           const RunAnalysis* analysis_a, const RunAnalysis* analysis_b) {
  Side sa = measure(a, range_a, "A", analysis_a), sb = measure(b, range_b, "B", analysis_b);
  RunComparison c{sa.summary, sb.summary, {}, {}, {}};
  std::map<OpKey, std::pair<OpTotals, OpTotals>> joined;
  for (const auto& [k, t] : sa.ops)
    joined[k].first = t;
  for (const auto& [k, t] : sb.ops)
    joined[k].second = t;
  for (const auto& [k, t] : joined) {
    OpChange op{k.kind, k.name, OpChange::Change::Same, t.first.ms, t.second.ms, t.first.count, t.second.count};
    const double delta = op.delta_ms();
    if (op.a_count == 0)
      op.change = OpChange::Change::Appeared;
    else if (op.b_count == 0)
      op.change = OpChange::Change::Disappeared;
    else if (std::fabs(delta) >= kSameMs && std::fabs(delta) >= kSameShare * std::max(op.a_ms, op.b_ms))
      op.change = delta > 0 ? OpChange::Change::Slower : OpChange::Change::Faster;
    c.ops.push_back(std::move(op));
  }
  std::stable_sort(c.ops.begin(), c.ops.end(), [](const OpChange& x, const OpChange& y) {
    return std::fabs(x.delta_ms()) > std::fabs(y.delta_ms());
  });
  c.headline = headline(c.a, c.b, c.ops);
  c.settings = setting_differences(a.run(), b.run());
  return c;
}

std::string RunComparison::settings_text() const {
  if (settings.empty()) return {};
  std::string text = "The runs differ in " + differences_text(settings) + ".";
  if (settings.size() > 1)
    text += " That is " + std::to_string(settings.size()) +
            " differences: the change in time below cannot be put down to any one of them.";
  return text;
}

nlohmann::ordered_json comparison_json(const RunComparison& c) {
  auto side = [](const CompareSide& s) {
    return nlohmann::ordered_json{{"path", s.path},
                                  {"ranks", s.ranks},
                                  {"iterations", {s.first_iteration, s.last_iteration}},
                                  {"iterations_compared", s.iterations},
                                  {"first_iteration_begin_ns", s.first_iteration_begin_ns},
                                  {"bucket_busbw_gbps", s.busbw_gbps >= 0 ? nlohmann::ordered_json(s.busbw_gbps)
                                                                          : nlohmann::ordered_json(nullptr)}};
  };
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  for (const Part& part : kParts) {
    const double a = c.a.*part.ms, b = c.b.*part.ms;
    parts.push_back({{"part", part.key}, {"a_ms", a}, {"b_ms", b}, {"delta_ms", b - a}});
  }
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const OpChange& op : c.ops) {
    ops.push_back({{"kind", kind_name(op.kind)},
                   {"name", op.name},
                   {"change", change_name(op.change)},
                   {"a_ms", op.a_ms},
                   {"b_ms", op.b_ms},
                   {"delta_ms", op.delta_ms()},
                   {"a_calls", op.a_count},
                   {"b_calls", op.b_count}});
  }
  nlohmann::ordered_json settings = nlohmann::ordered_json::array();
  for (const auto& d : c.settings)
    settings.push_back({{"name", d.name}, {"a", d.a}, {"b", d.b}});
  return {{"a", side(c.a)},         {"b", side(c.b)},    {"settings", settings},
          {"headline", c.headline}, {"parts_ms", parts}, {"ops", ops}};
}

std::string comparison_text(const RunComparison& c, size_t max_ops) {
  std::string out;
  char line[512];
  for (const auto& [label, s] : {std::pair<const char*, const CompareSide&>{"A", c.a}, {"B", c.b}}) {
    std::snprintf(line, sizeof(line), "%s: %s, %d ranks, iterations %lld-%lld (%lld compared)\n", label, s.path.c_str(),
                  s.ranks, static_cast<long long>(s.first_iteration), static_cast<long long>(s.last_iteration),
                  static_cast<long long>(s.iterations));
    out += line;
  }
  if (!c.settings.empty()) out += c.settings_text() + "\n";
  out += c.headline + "\n\n";
  std::snprintf(line, sizeof(line), "%-26s %10s %10s %12s\n", "per rank and iteration", "A (ms)", "B (ms)", "change");
  out += line;
  const bool gpu = c.a.gpu || c.b.gpu;
  for (const Part& part : kParts) {
    const double a = c.a.*part.ms, b = c.b.*part.ms;
    // A part neither run has: GPU computation of two CPU runs, CPU phases of two GPU runs.
    if (a == 0 && b == 0 && (part.ms == &CompareSide::gpu_computation_ms ? !gpu : gpu)) continue;
    std::snprintf(line, sizeof(line), "%-26s %10.2f %10.2f %12s\n", part.label, a, b, signed_ms(b - a).c_str());
    out += line;
  }
  if (c.a.busbw_gbps > 0 && c.b.busbw_gbps > 0) {
    std::snprintf(line, sizeof(line), "%-26s %10s %10s %+11.0f%%\n", "bus bandwidth (buckets)",
                  rate_text(c.a.busbw_gbps).c_str(), rate_text(c.b.busbw_gbps).c_str(),
                  100 * (c.b.busbw_gbps / c.a.busbw_gbps - 1));
    out += line;
  }
  out += "\nops by change in total time per rank and iteration (largest first):\n";
  std::snprintf(line, sizeof(line), "%-12s %-16s %-40s %9s %9s %12s %8s %8s\n", "change", "kind", "name", "A (ms)",
                "B (ms)", "change", "calls A", "calls B");
  out += line;
  for (size_t i = 0; i < c.ops.size() && i < max_ops; ++i) {
    const OpChange& op = c.ops[i];
    std::snprintf(line, sizeof(line), "%-12s %-16s %-40.40s %9.3f %9.3f %12s %8.1f %8.1f\n", change_name(op.change),
                  kind_name(op.kind), op.name.c_str(), op.a_ms, op.b_ms, signed_ms(op.delta_ms()).c_str(), op.a_count,
                  op.b_count);
    out += line;
  }
  if (c.ops.size() > max_ops) out += "... " + std::to_string(c.ops.size() - max_ops) + " more (--json lists all)\n";
  return out;
}

}  // namespace ddpscope::probes
