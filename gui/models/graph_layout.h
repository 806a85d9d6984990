// Lays out a GraphData with Graphviz's dot (libgvc): gradients flow from the loss at the
// top down to the accumulators; a distributed graph's workers are clusters. Coordinates
// in points, y pointing down, ready to paint.
#pragma once

#include <string>
#include <vector>

#include "graph_data.h"

namespace ddpscope::gui {

struct NodeBox {
  double x = 0, y = 0, w = 0, h = 0;  // centre and size
};
struct EdgePath {
  std::vector<std::pair<double, double>> points;  // a cubic B-spline: 1 + 3k points
  bool arrow = false;
  std::pair<double, double> arrow_tip{};
};

// A distributed graph's worker: the box around its nodes.
struct ClusterBox {
  int rank = 0;
  double x = 0, y = 0, w = 0, h = 0;  // top-left corner and size
};

struct GraphLayout {
  std::vector<NodeBox> nodes;        // as GraphData::nodes
  std::vector<EdgePath> edges;       // as GraphData::edges
  std::vector<ClusterBox> clusters;  // a distributed graph's workers, by rank
  double width = 0, height = 0;
  std::string error;  // why there is no layout (Graphviz failed)
};

// The label drawn in a node: its op (or module) and dependency count, and its time.
std::string nodeLabel(const GraphNode& node);

GraphLayout layoutGraph(const GraphData& graph);

}  // namespace ddpscope::gui
