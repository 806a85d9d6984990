#include "graph_snapshot.h"

#include <deque>
#include <unordered_map>

#include "autograd_meta.h"

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

}  // namespace ddpscope::autograd
