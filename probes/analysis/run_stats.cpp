#include "run_stats.h"

#include <cmath>
#include <map>
#include <set>

#include "collective_bandwidth.h"
#include "gpu_time.h"
#include "overlap_analysis.h"
#include "slow_cause.h"

namespace ddpscope::probes {
namespace {

// NaN (no communication) becomes null.
nlohmann::ordered_json number(double v) {
  return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}

nlohmann::ordered_json run_json(RunStoreReader& run) {
  const RunRow r = run.run();
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  try {
    config = nlohmann::ordered_json::parse(r.config_json.empty() ? "{}" : r.config_json);
  } catch (const nlohmann::ordered_json::exception&) {
  }
  return {{"status", r.status},
          {"message", r.message},
          {"failed_rank", r.failed_rank >= 0 ? nlohmann::ordered_json(r.failed_rank) : nullptr},
          {"created_at", r.created_at},
          {"ended_at", r.ended_at},
          {"world_size", r.world_size},
          {"backend", r.backend},
          {"model", r.model},
          {"config", config},
          {"rejected_batches", r.rejected_batches},
          {"spans", run.span_count()}};
}

nlohmann::ordered_json ranks_json(RunStoreReader& run) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const RankRow& k : run.ranks()) {
    ranks.push_back({{"rank", k.rank},
                     {"host", k.host},
                     {"pid", k.pid},
                     {"device", k.device},
                     {"clock_offset_ns", k.clock_offset_ns},
                     {"clock_rtt_ns", k.clock_rtt_ns >= 0 ? nlohmann::ordered_json(k.clock_rtt_ns) : nullptr},
                     {"events_received", k.events_received},
                     {"events_dropped", k.events_dropped}});
  }
  return ranks;
}

nlohmann::ordered_json iterations_json(const RunAnalysis& a) {
  nlohmann::ordered_json iterations = nlohmann::ordered_json::array();
  for (const IterationAnalysis& it : a.iterations) {
    nlohmann::ordered_json row = {{"rank", it.rank},
                                  {"iteration", it.iteration},
                                  {"iteration_ms", it.iteration_ms},
                                  {"forward_ms", it.forward_ms},
                                  {"backward_ms", it.backward_ms},
                                  {"optimizer_ms", it.optimizer_ms},
                                  {"figures", it.from_gpu ? "gpu" : "cpu"},
                                  {"compute_ms", it.compute_ms},
                                  {"comm_ms", it.comm_ms},
                                  {"exposed_comm_ms", it.exposed_comm_ms},
                                  {"overlap_ratio", number(it.overlap_ratio)}};
    if (it.wait_known) {
      row["exposed_wait_ms"] = it.exposed_wait_ms;
      row["exposed_transfer_ms"] = it.exposed_transfer_ms;
    }
    if (it.from_gpu) {
      // The GPU's figures above; the CPU's view (launch and enqueue time) beside them.
      row["gpu_span_ms"] = it.gpu_span_ms;
      row["gpu_idle_ms"] = it.gpu_idle_ms;
      row["gpu_memory_ms"] = it.gpu_memory_ms;
      row["cpu_compute_ms"] = it.cpu_compute_ms;
      row["cpu_comm_ms"] = it.cpu_comm_ms;
      row["cpu_exposed_comm_ms"] = it.cpu_exposed_comm_ms;
      row["cpu_overlap_ratio"] = number(it.cpu_overlap_ratio);
    }
    iterations.push_back(row);
  }
  return iterations;
}

// Bus bandwidth by rank and by bucket (collective_bandwidth.h); the list of every collective
// is left to `links`, as it grows with the run.
nlohmann::ordered_json bandwidth_json(const BandwidthReport& b) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array(), buckets = nlohmann::ordered_json::array();
  for (const RankRate& r : b.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"collectives", r.collectives},
                     {"bytes", r.bytes},
                     {"transfer_ms", r.transfer_ms},
                     {"busbw_gbps", r.busbw_gbps},
                     {"median_busbw_gbps", r.median_busbw_gbps}});
  for (const BucketRate& r : b.buckets)
    buckets.push_back({{"bucket", r.bucket},
                       {"bytes", r.bytes},
                       {"samples", r.samples},
                       {"median_transfer_ms", r.median_transfer_ms},
                       {"median_busbw_gbps", r.median_busbw_gbps},
                       {"median_beside_backward", r.median_beside_backward}});
  return {
      {"unit", "GB/s (10^9 bytes a second), bus bandwidth as nccl-tests counts it"},
      {"timed_from",
       b.lower_bound() ? "the last arrival of the ranks recorded (a lower bound)" : "the last rank's arrival"},
      {"group_ranks", b.group_ranks},
      {"ranks_recorded", b.ranks_recorded},
      {"min_bytes", BandwidthReport::kMinBytes},
      {"reference_busbw_gbps", b.reference_busbw_gbps},
      {"reference", b.reference_measured ? "the slowest link between neighbouring ranks, measured by --measure-links"
                                         : "the run's 95th percentile (no link measured)"},
      {"reference_measured", b.reference_measured},
      {"collectives", b.collectives.size()},
      {"without_rate", b.without_rate},
      {"by_rank", ranks},
      {"by_bucket", buckets}};
}

nlohmann::ordered_json buckets_json(const RunAnalysis& a) {
  nlohmann::ordered_json buckets = nlohmann::ordered_json::array();
  for (const BucketTiming& b : a.buckets) {
    buckets.push_back({{"rank", b.rank},
                       {"iteration", b.iteration},
                       {"bucket", b.bucket},
                       {"bytes", b.bytes},
                       {"ready_ns", b.ready_ns >= 0 ? nlohmann::ordered_json(b.ready_ns) : nullptr},
                       {"allreduce_start_ns", b.start_ns},
                       {"allreduce_end_ns", b.end_ns},
                       {"allreduce_ms", (b.end_ns - b.start_ns) * 1e-6},
                       {"allreduce_timed_by", b.gpu ? "nccl kernel" : "cpu"},
                       {"wait_ms", b.wait_ms}});
  }
  return buckets;
}

// Per rank, the means over its iterations, the first left out when there are three or
// more (it warms caches and builds buckets).
nlohmann::ordered_json summary_json(const RunAnalysis& a, const std::set<int64_t>& stalled) {
  const std::map<int, RankSums> sums = rank_sums(a, stalled);
  nlohmann::ordered_json summary = nlohmann::ordered_json::array();
  for (const auto& [rank, s] : sums) {
    nlohmann::ordered_json row = {{"rank", rank},
                                  {"iterations", s.n},
                                  {"figures", s.gpu ? "gpu" : "cpu"},
                                  {"mean_iteration_ms", s.iteration / s.n},
                                  {"mean_compute_ms", s.compute / s.n},
                                  {"mean_comm_ms", s.comm / s.n},
                                  {"mean_exposed_comm_ms", s.exposed / s.n},
                                  {"overlap_ratio", number(s.comm > 0 ? 1 - s.exposed / s.comm : NAN)}};
    if (s.wait_n > 0) {
      row["mean_exposed_wait_ms"] = s.exposed_wait / s.wait_n;
      row["mean_exposed_transfer_ms"] = s.exposed_transfer / s.wait_n;
    }
    if (s.gpu) {
      row["mean_gpu_idle_ms"] = s.gpu_idle / s.n;
      row["cpu_mean_comm_ms"] = s.cpu_comm / s.n;
      row["cpu_mean_exposed_comm_ms"] = s.cpu_exposed / s.n;
    }
    summary.push_back(row);
  }
  return summary;
}

nlohmann::ordered_json stragglers_json(const std::vector<Straggler>& list) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Straggler& s : list) {
    nlohmann::ordered_json row = {
        {"iteration", s.iteration}, {"rank", s.rank}, {"lag_ms", s.lag_ms}, {"rule", s.gpu ? "gpu" : "cpu"}};
    if (s.gpu) {
      row["computation_ms"] = s.computation_ms;
      row["others_median_computation_ms"] = s.others_median_ms;
    }
    out.push_back(row);
  }
  return out;
}

// Per iteration, the rank the others waited for where it cost them more than the noise, as
// `why` counts it (slow_cause.h). The first-bucket rule of "stragglers" misses a rank slow
// in the middle of backward: with rank 1 asleep 24 ms at its third layer every iteration,
// it listed lags of 3-5 ms taking turns between the ranks.
nlohmann::ordered_json late_json(const SlowCause& cause) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const SlowIteration& it : cause.by_iteration)
    if (it.rank >= 0) rows.push_back({{"iteration", it.iteration}, {"rank", it.rank}, {"lost_ms", it.lost_ms}});
  // The rows are the whole run's; a verdict over a stretch of it (a spell) says which.
  nlohmann::ordered_json spell = nullptr;
  if (cause.spell.first >= 0) spell = {{"first_iteration", cause.spell.first}, {"last_iteration", cause.spell.last}};
  return {{"iterations", cause.by_iteration.size()},
          {"straggler", cause.straggler.rank >= 0 ? nlohmann::ordered_json(cause.straggler.rank) : nullptr},
          {"spell", spell},
          {"by_iteration", rows}};
}

}  // namespace

nlohmann::ordered_json run_stats_json(RunStoreReader& run) {
  nlohmann::ordered_json out;
  out["run"] = run_json(run);
  out["ranks"] = ranks_json(run);
  const RunAnalysis a = analyze_run(run);
  // Stalls the cause analysis names (slow_cause.h): in no mean, named below. With the
  // gradients' ready times, as `why` and the app read it: without them backward runs on to
  // its end, holding a waiting rank's wait for the buckets, and the straggler's excess there
  // reads as the others' too.
  const SlowCause cause = analyze_slow_cause(run, /*layers=*/true);
  std::set<int64_t> stalled;
  nlohmann::ordered_json stalls = nlohmann::ordered_json::array();
  for (const SlowStall& st : cause.stalls) {
    stalled.insert(st.iteration);
    stalls.push_back({{"iteration", st.iteration},
                      {"rank", st.rank},
                      {"lost_ms", st.lost_ms},
                      {"waited_in", st.collective},
                      {"waiting_rank", st.waiting_rank}});
  }
  out["summary"] = summary_json(a, stalled);  // before the long lists, for readers
  // Iterations an error cut short: in no mean above, named here.
  nlohmann::ordered_json cut = nlohmann::ordered_json::array();
  for (const CutShortIteration& c : a.cut_short)
    cut.push_back(
        {{"rank", c.rank}, {"iteration", c.iteration}, {"until_error_ms", (c.t_end_ns - c.t_begin_ns) / 1e6}});
  out["cut_short"] = cut;
  out["stalls"] = stalls;
  out["iterations"] = iterations_json(a);
  out["buckets"] = buckets_json(a);
  BandwidthReport bandwidth =
      analyze_bandwidth(read_timelines(run, /*layers=*/false), run.names(), a, run.run().world_size);
  use_measured_ceiling(bandwidth, run);
  out["bandwidth"] = bandwidth_json(bandwidth);
  const std::vector<Straggler> stragglers = find_stragglers(a);
  out["stragglers"] = stragglers_json(stragglers);
  out["late"] = late_json(cause);
  out["gpu"] = gpu_time_json(gpu_time_breakdown(run), stragglers);
  out["nonfinite"] = first_nonfinite_json(run);
  out["rejected"] = rejected_json(run);
  return out;
}

nlohmann::ordered_json rejected_json(RunStoreReader& run) {
  // RPC agents record their totals as metrics when they shut down (rpc.rejected_*).
  int64_t without_token = 0, malformed = 0, events_refused = 0;
  nlohmann::ordered_json by_rank = nlohmann::ordered_json::array();
  std::map<int, std::pair<int64_t, int64_t>> per_rank;
  for (const MetricRow& m : run.metrics()) {
    if (m.name == "rpc.rejected_token") per_rank[m.rank].first += static_cast<int64_t>(m.value);
    if (m.name == "rpc.rejected_malformed") per_rank[m.rank].second += static_cast<int64_t>(m.value);
    if (m.name == "collector.events_refused") events_refused += static_cast<int64_t>(m.value);
  }
  for (const auto& [rank, counts] : per_rank) {
    without_token += counts.first;
    malformed += counts.second;
    if (counts.first + counts.second > 0)
      by_rank.push_back({{"rank", rank}, {"rpc_without_token", counts.first}, {"rpc_malformed", counts.second}});
  }
  return {{"collector_batches", run.run().rejected_batches},
          {"collector_events", events_refused},  // of a rank's batch: they end before they begin, or overflow
          {"rpc_without_token", without_token},
          {"rpc_malformed", malformed},
          {"by_rank", by_rank}};
}

nlohmann::ordered_json first_nonfinite_json(RunStoreReader& run) {
  // The trainer marks the first non-finite loss and gradient of each rank
  // (apps::NonFiniteWatch): "non-finite loss: nan", "non-finite gradient: fc1.weight".
  nlohmann::ordered_json loss = nullptr, gradient = nullptr;
  int64_t loss_at = 0, gradient_at = 0;
  for (const SpanRow& s : run.spans({.kinds = {Kind::Mark}})) {
    static constexpr std::string_view kLoss = "non-finite loss: ", kGradient = "non-finite gradient: ";
    const std::string_view name = s.name;
    if (name.starts_with(kLoss) && (loss.is_null() || s.t_begin_ns < loss_at)) {
      loss_at = s.t_begin_ns;
      loss = {{"iteration", s.iteration}, {"rank", s.rank}, {"value", name.substr(kLoss.size())}};
    } else if (name.starts_with(kGradient) && (gradient.is_null() || s.t_begin_ns < gradient_at)) {
      gradient_at = s.t_begin_ns;
      gradient = {{"iteration", s.iteration}, {"rank", s.rank}, {"parameter", name.substr(kGradient.size())}};
    }
  }
  if (loss.is_null() && gradient.is_null()) return nullptr;
  return {{"loss", loss}, {"gradient", gradient}};
}

}  // namespace ddpscope::probes
