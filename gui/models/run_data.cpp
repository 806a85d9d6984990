#include "run_data.h"

#include <future>

namespace ddpscope::gui {

RunData load_run(const std::string& path, int64_t now_ns, const RunData* previous, bool with_hang) {
  if (previous && previous->path != path) previous = nullptr;
  probes::RunStoreReader reader(path);
  // The timeline (most of the time for a big run) loads on a second thread with its
  // own reader while this one does the rest.
  auto timeline = std::async(std::launch::async, [&path, previous] {
    probes::RunStoreReader own(path);
    if (!previous) return load_timeline(own);
    TimelineData t = previous->timeline;
    extend_timeline(t, own);
    return t;
  });
  RunData d;
  d.path = path;
  d.run = reader.run();
  d.ranks = reader.ranks();
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
  if (with_hang) d.hang = probes::analyze_hang(reader, now_ns);
  d.graph = load_graph(reader, 0);
  d.dist_graphs = list_dist_graphs(reader);
  d.sequence = load_sequence(reader, static_cast<int>(d.run.world_size));
  d.span_count = reader.span_count();
  const nlohmann::ordered_json first_nonfinite = probes::first_nonfinite_json(reader);
  d.nonfinite = describe_nonfinite(first_nonfinite);
  if (!first_nonfinite.is_null() && !first_nonfinite["loss"].is_null())
    d.nonfinite_loss_iteration = first_nonfinite["loss"]["iteration"].get<int64_t>();
  d.timeline = timeline.get();
  mark_exposed(d.timeline, d.analysis);
  return d;
}

std::string describe_nonfinite(const nlohmann::ordered_json& first) {
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
    out += "The first gradient that was not finite: " + gradient["parameter"].get<std::string>() +
           " on rank " + std::to_string(gradient["rank"].get<int>()) + " in iteration " +
           std::to_string(gradient["iteration"].get<int64_t>()) + ".";
  }
  return out;
}

}  // namespace ddpscope::gui
