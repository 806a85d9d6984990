// A plain description of a backward graph (nodes, edges, dependency counts) for the
// desktop app's graph view, the probes, and DDP's search for unused parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node.h"

namespace ddpscope::autograd {

struct GraphNodeInfo {
  uint32_t id = 0;  // index in `nodes`, in breadth-first order from the roots
  std::string name;
  NodeKind kind = NodeKind::Operation;
  uint64_t sequence_nr = 0;
  int dependencies = 0;        // edges leading into the node: gradients it waits for
  const Node* node = nullptr;  // valid while the graph lives
};

struct GraphEdgeInfo {
  uint32_t src = 0;  // gradient flows src -> dst
  uint32_t dst = 0;
  uint32_t input_nr = 0;
};

struct GraphSnapshot {
  std::vector<GraphNodeInfo> nodes;
  std::vector<GraphEdgeInfo> edges;
};

// Walks the graph behind `roots` (their grad_fns, or accumulators for leaves).
GraphSnapshot snapshot_graph(const variable_list& roots);

// Sends the graph behind `roots` to the probes (nothing while they are off). ctx_id -1:
// a local graph; distributed autograd passes its context id.
void record_graph(const variable_list& roots, int64_t iteration, int64_t ctx_id = -1);

}  // namespace ddpscope::autograd
