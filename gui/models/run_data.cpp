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
  d.timeline = timeline.get();
  mark_exposed(d.timeline, d.analysis);
  return d;
}

}  // namespace ddpscope::gui
