#include "run_data.h"

namespace ddpscope::gui {

RunData load_run(const std::string& path, int64_t now_ns) {
  probes::RunStoreReader reader(path);
  RunData d;
  d.path = path;
  d.run = reader.run();
  d.ranks = reader.ranks();
  d.analysis = probes::analyze_run(reader);
  for (const auto& r : d.ranks) {
    auto b = reader.buckets(r.rank);
    d.buckets.insert(d.buckets.end(), b.begin(), b.end());
    auto p = reader.params(r.rank);
    d.params.insert(d.params.end(), p.begin(), p.end());
  }
  d.metrics = reader.metrics();
  d.hang = probes::analyze_hang(reader, now_ns);
  d.graph = load_graph(reader, 0);
  d.span_count = reader.span_count();
  d.timeline = load_timeline(reader);
  mark_exposed(d.timeline, d.analysis);
  return d;
}

}  // namespace ddpscope::gui
