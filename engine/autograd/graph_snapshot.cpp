#include "graph_snapshot.h"

#include <deque>
#include <unordered_map>

#include "autograd_meta.h"
#include "probe.h"
#include "records.h"

namespace ddpscope::autograd {

GraphSnapshot snapshot_graph(const variable_list& roots) {
  GraphSnapshot snap;
  std::unordered_map<const Node*, uint32_t> ids;
  std::deque<const Node*> queue;
  auto visit = [&](const Node* n) {
    auto [it, inserted] = ids.try_emplace(n, static_cast<uint32_t>(snap.nodes.size()));
    if (inserted) {
      snap.nodes.push_back({it->second, n->name(), n->kind(), n->sequence_nr(), 0, n});
      queue.push_back(n);
    }
    return it->second;
  };
  for (const Tensor& r : roots) {
    Edge e = gradient_edge(r);
    if (e.is_valid()) visit(e.function.get());
  }
  while (!queue.empty()) {
    const Node* n = queue.front();
    queue.pop_front();
    const uint32_t src = ids.at(n);
    for (const Edge& e : n->next_edges()) {
      if (!e.is_valid()) continue;
      const uint32_t dst = visit(e.function.get());
      snap.nodes[dst].dependencies++;
      snap.edges.push_back({src, dst, e.input_nr});
    }
  }
  return snap;
}

void record_graph(const variable_list& roots, int64_t iteration, int64_t ctx_id) {
  if (!probes::enabled()) return;
  const GraphSnapshot snap = snapshot_graph(roots);
  std::vector<probes::GraphNodeRecord> nodes;
  std::vector<probes::GraphEdgeRecord> edges;
  nodes.reserve(snap.nodes.size());
  for (const auto& n : snap.nodes) {
    nodes.push_back({n.id, n.name, node_kind_name(n.kind), n.dependencies, n.sequence_nr});
  }
  for (const auto& e : snap.edges)
    edges.push_back({e.src, e.dst, e.input_nr});
  probes::record_graph(ctx_id, iteration, nodes, edges);
}

}  // namespace ddpscope::autograd
