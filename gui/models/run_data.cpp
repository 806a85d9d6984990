#include "run_data.h"

#include <cstdlib>

#include <future>
#include <map>

#include "hang_processes.h"
#include "network_bound.h"

namespace ddpscope::gui {

RunData loadRun(const std::string& path, int64_t now_ns, const RunData* previous, bool with_hang) {
  if (previous && previous->path != path) previous = nullptr;
  probes::RunStoreReader reader(path);
  const probes::RunRow run = reader.run();
  const int64_t span_count = reader.span_count();
  // A big finished run: its structure first; the detail follows for the window shown.
  const bool structure_only = !previous && reader.packed() && run.status != "running" && span_count > detailAtOpen();
  // The timeline (most of the time for a big run) loads on a second thread with its
  // own reader while this one does the rest.
  auto timeline = std::async(std::launch::async, [&path, previous, structure_only] {
    probes::RunStoreReader own(path);
    if (structure_only) return loadTimelineStructure(own);
    if (!previous) return loadTimeline(own);
    TimelineData t = previous->timeline;
    extendTimeline(t, own);
    return t;
  });
  RunData d;
  d.path = path;
  d.run = run;
  d.ranks = reader.ranks();
  d.attendance = probes::rank_attendance(reader);
  if (previous) {
    d.analysis = previous->analysis;
    probes::extend_analysis(d.analysis, reader);
  } else {
    d.analysis = probes::analyze_run(reader);
  }
  for (const auto& r : d.ranks) {
    auto b = reader.buckets(r.rank);
    d.buckets.insert(d.buckets.end(), b.begin(), b.end());
    auto p = reader.params(r.rank);
    d.params.insert(d.params.end(), p.begin(), p.end());
  }
  d.metrics = reader.metrics();
  for (const auto& r : d.ranks) {
    d.zero_shards = reader.zero_shards(r.rank);
    if (!d.zero_shards.empty()) break;
  }
  // GPU work comes only from imported PyTorch traces: other runs skip the scan.
  if (d.run.config_json.find("\"torch-trace\"") != std::string::npos) d.gpu = probes::gpu_time_breakdown(reader);
  if (with_hang) {
    d.hang = probes::analyze_hang(reader, now_ns);
    // A live job's ranks that are stopped or gone cannot answer: their processes say so.
    if (now_ns > 0 && run.status == "running")
      probes::add_unanswering_ranks(d.hang, d.ranks, probes::rank_process_states(d.ranks));
  }
  d.links = probes::analyze_links(reader);
  // Only once a job has ended: it reads the timelines again and asks advise (seconds on a
  // big run, too much for each live reload).
  if (run.status != "running") {
    if (const auto bound = probes::find_network_bound(reader, d.links)) d.network_bound = bound->text;
  }
  probes::SlowCauses causes =
      probes::analyze_slow_causes(reader, now_ns > 0 ? RunData::kRecentIterations : 0, !structure_only, &d.links);
  d.cause = std::move(causes.whole);
  d.recent_cause = std::move(causes.recent);
  d.graph = loadGraph(reader, 0);
  d.dist_graphs = listDistGraphs(reader);
  // Lifelines for the ranks there are, not for a world size a trace only claims (10^9
  // lifelines filled 6.6 GB before the window showed).
  int lifelines = 0;
  for (const auto& r : d.ranks)
    lifelines = std::max(lifelines, r.rank + 1);
  if (d.ranks.empty()) lifelines = static_cast<int>(std::min<int64_t>(d.run.world_size, 4096));
  d.sequence = loadSequence(reader, lifelines);
  d.span_count = span_count;
  if (structure_only) d.packs = reader.pack_extents();
  const nlohmann::ordered_json first_nonfinite = probes::first_nonfinite_json(reader);
  d.nonfinite = describeNonfinite(first_nonfinite);
  if (!first_nonfinite.is_null() && !first_nonfinite["loss"].is_null())
    d.nonfinite_loss_iteration = first_nonfinite["loss"]["iteration"].get<int64_t>();
  d.rejected = describeRejected(probes::rejected_json(reader));
  d.timeline = timeline.get();
  d.timeline.world_size = static_cast<int>(std::min<int64_t>(d.run.world_size, 1 << 20));
  d.timeline.link_ceiling_gbps = d.links.ring_ceiling_gbps;
  d.sequence.origin_ns = d.timeline.begin_ns;  // one clock on the Messages and Timeline tabs
  markExposed(d.timeline, d.analysis);
  return d;
}

int64_t detailAtOpen() {
  if (const char* v = std::getenv("DDPSCOPE_DETAIL_AT_OPEN")) {
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (end != v && *end == '\0' && n > 0) return n;
  }
  return RunData::kDetailAtOpen;
}

std::vector<std::pair<int, int64_t>> optimizerStateBytes(const RunData& run) {
  std::map<int, std::pair<int64_t, double>> last;  // rank -> (iteration, bytes)
  for (const auto& m : run.metrics) {
    if (m.name != "optimizer_state_bytes") continue;
    auto [it, fresh] = last.try_emplace(m.rank, m.iteration, m.value);
    if (!fresh && m.iteration >= it->second.first) it->second = {m.iteration, m.value};
  }
  std::vector<std::pair<int, int64_t>> out;
  for (const auto& [rank, v] : last)
    out.emplace_back(rank, static_cast<int64_t>(v.second));
  return out;
}

std::vector<OptimizerStateRow> optimizerStateRows(const RunData& run) {
  std::vector<OptimizerStateRow> rows;
  for (const auto& [rank, bytes] : optimizerStateBytes(run)) {
    OptimizerStateRow row{rank, bytes, 0, 0};
    for (const auto& s : run.zero_shards) {
      if (s.owner != rank) continue;
      ++row.owned_parameters;
      row.owned_elements += s.numel;
    }
    rows.push_back(row);
  }
  return rows;
}

std::string describeRejected(const nlohmann::ordered_json& r) {
  const int64_t batches = r.value("collector_batches", int64_t{0});
  const int64_t token = r.value("rpc_without_token", int64_t{0}), malformed = r.value("rpc_malformed", int64_t{0});
  const int64_t events = r.value("collector_events", int64_t{0});
  if (batches + token + malformed + events == 0) return {};
  std::string text = "Refused from outside the job:";
  if (batches > 0) text += detail::concat(" ", batches, " batch", batches == 1 ? "" : "es", " at the collector;");
  if (events > 0)
    text += detail::concat(" ", events, " event", events == 1 ? "" : "s",
                           " that ended before they began or overflowed the clock;");
  if (token + malformed > 0) {
    text += detail::concat(" ", token, " RPC message", token == 1 ? "" : "s", " without the job's token and ",
                           malformed, " malformed (");
    bool first = true;
    for (const auto& k : r["by_rank"]) {
      text += detail::concat(first ? "" : ", ", "rank ", k["rank"].get<int>(), ": ",
                             k["rpc_without_token"].get<int64_t>() + k["rpc_malformed"].get<int64_t>());
      first = false;
    }
    text += ");";
  }
  text.back() = '.';
  return text;
}

std::string describeNonfinite(const nlohmann::ordered_json& first) {
  if (first.is_null()) return {};
  std::string out;
  const auto& loss = first["loss"];
  const auto& gradient = first["gradient"];
  if (!loss.is_null()) {
    out = "The loss became " + loss["value"].get<std::string>() + " in iteration " +
          std::to_string(loss["iteration"].get<int64_t>()) + " (first on rank " +
          std::to_string(loss["rank"].get<int>()) + ").";
  }
  if (!gradient.is_null()) {
    if (!out.empty()) out += " ";
    out += "The first gradient that was not finite: " + gradient["parameter"].get<std::string>() + " on rank " +
           std::to_string(gradient["rank"].get<int>()) + " in iteration " +
           std::to_string(gradient["iteration"].get<int64_t>()) + ".";
  }
  return out;
}

}  // namespace ddpscope::gui
