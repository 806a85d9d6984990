// GraphData: a recorded autograd graph for the graph view: nodes with their kind,
// dependency count and, from the AutogradNode spans of the same iteration, how long each
// ran; and the same graph collapsed by module for large models. Plain data, no Qt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::gui {

struct GraphNode {
  int64_t id = 0;
  std::string op;    // "LinearBackward", "AccumulateGrad(layers.0.weight)"
  std::string kind;  // operation | accumulate_grad | root | send | recv | module
  int64_t deps = 0;  // gradients the node waits for
  int64_t sequence_nr = -1;
  double exec_ms = -1;  // its run in the recorded iteration; -1 when not recorded
  std::string module;   // the module it belongs to ("module.layers.2"), "" if unknown
  int64_t members = 1;  // nodes folded into a collapsed module node
};

struct GraphEdge {
  int64_t src = 0, dst = 0;  // gradient flows src -> dst (ids)
};

struct GraphData {
  int rank = 0;
  int64_t iteration = -1;
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
  bool collapsed = false;
};

// The first graph `rank` recorded (empty nodes when none).
GraphData load_graph(probes::RunStoreReader& run, int rank, int64_t iteration = -1);

// One node per module (operations join the module of the parameters their gradient
// reaches first); edges between modules, without duplicates or self-loops.
GraphData collapse_by_module(const GraphData& graph);

// The module of a parameter name: "module.layers.2.weight" -> "module.layers.2".
std::string module_of_parameter(const std::string& name);

}  // namespace ddpscope::gui
