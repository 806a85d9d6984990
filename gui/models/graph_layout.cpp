#include "graph_layout.h"

#include <graphviz/gvc.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

namespace ddpscope::gui {

std::string nodeLabel(const GraphNode& n) {
  char buf[64];
  std::string label = n.op;
  // "AccumulateGrad(module.layers.2.weight)" on two lines, the parameter under the op: on
  // one line these nodes made a model's graph too wide to read in half a laptop's window.
  if (const size_t open = label.find('('); open != std::string::npos && open > 0 && label.back() == ')')
    label = label.substr(0, open) + "\n" + label.substr(open + 1, label.size() - open - 2);
  if (n.kind == "module") {
    std::snprintf(buf, sizeof buf, "\n%lld nodes", static_cast<long long>(n.members));
    label += buf;
  } else {
    std::snprintf(buf, sizeof buf, "\ndeps %lld", static_cast<long long>(n.deps));
    label += buf;
  }
  if (n.exec_ms >= 0) {
    std::snprintf(buf, sizeof buf, " · %.3f ms", n.exec_ms);
    label += buf;
  }
  // A send or recv joint: its message and where its other end is.
  if (n.msg_id >= 0) label += "\nmsg " + formatGlobalId(n.msg_id) + " · worker " + std::to_string(n.peer);
  return label;
}

namespace {

// cgraph takes char* for names and attributes it does not modify.
char* c(const char* s) { return const_cast<char*>(s); }

// libgvc keeps global state: one layout at a time.
std::mutex& graphvizMutex() {
  static std::mutex m;
  return m;
}

}  // namespace

GraphLayout layoutGraph(const GraphData& graph) {
  GraphLayout out;
  if (graph.nodes.empty()) return out;
  std::lock_guard<std::mutex> lock(graphvizMutex());
  static GVC_t* gvc = gvContext();
  if (!gvc) {
    out.error = "Graphviz could not start (gvContext failed)";
    return out;
  }
  Agraph_t* g = agopen(c("autograd"), Agdirected, nullptr);
  agattr(g, AGRAPH, c("rankdir"), c("TB"));
  agattr(g, AGRAPH, c("nodesep"), c("0.25"));
  agattr(g, AGRAPH, c("ranksep"), c("0.35"));
  agattr(g, AGNODE, c("shape"), c("box"));
  agattr(g, AGNODE, c("fontsize"), c("10"));
  agattr(g, AGNODE, c("label"), c(""));
  // A distributed graph: one cluster per worker ("cluster" prefixes make dot box them).
  std::map<int, Agraph_t*> clusters;
  if (graph.distributed) {
    agattr(g, AGRAPH, c("label"), c(""));
    agattr(g, AGRAPH, c("fontsize"), c("12"));
    for (const auto& n : graph.nodes) {
      if (clusters.count(n.rank)) continue;
      const std::string name = "cluster_" + std::to_string(n.rank);
      Agraph_t* sub = agsubg(g, c(name.c_str()), 1);
      agset(sub, c("label"), c(("worker " + std::to_string(n.rank)).c_str()));
      clusters[n.rank] = sub;
    }
  }
  std::vector<Agnode_t*> nodes;
  std::map<int64_t, Agnode_t*> by_id;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const std::string name = "n" + std::to_string(i);
    const auto cluster = clusters.find(graph.nodes[i].rank);
    Agnode_t* n = agnode(cluster != clusters.end() ? cluster->second : g, c(name.c_str()), 1);
    agset(n, c("label"), c(nodeLabel(graph.nodes[i]).c_str()));
    nodes.push_back(n);
    by_id[graph.nodes[i].id] = n;
  }
  std::vector<Agedge_t*> edges;
  for (const auto& e : graph.edges) {
    edges.push_back(agedge(g, by_id.at(e.src), by_id.at(e.dst), nullptr, 1));
  }
  if (gvLayout(gvc, g, "dot") != 0) {
    out.error = "Graphviz's dot layout is not available (install the graphviz package)";
    agclose(g);
    return out;
  }
  const boxf bb = GD_bb(g);
  out.width = bb.UR.x - bb.LL.x;
  out.height = bb.UR.y - bb.LL.y;
  auto flip = [&](pointf p) { return std::make_pair(p.x - bb.LL.x, bb.UR.y - p.y); };
  for (const auto& [rank, sub] : clusters) {
    const boxf cb = GD_bb(sub);
    const auto [x, y] = flip({cb.LL.x, cb.UR.y});  // the top-left corner
    out.clusters.push_back({rank, x, y, cb.UR.x - cb.LL.x, cb.UR.y - cb.LL.y});
  }
  for (Agnode_t* n : nodes) {
    const auto [x, y] = flip(ND_coord(n));
    out.nodes.push_back({x, y, ND_width(n) * 72.0, ND_height(n) * 72.0});
  }
  for (Agedge_t* e : edges) {
    EdgePath path;
    // Parallel edges share one Graphviz edge (agedge finds the existing one).
    if (e && ED_spl(e) && ED_spl(e)->size > 0) {
      const bezier& bz = ED_spl(e)->list[0];
      for (int i = 0; i < bz.size; ++i)
        path.points.push_back(flip(bz.list[i]));
      if (bz.eflag) {
        path.arrow = true;
        path.arrow_tip = flip(bz.ep);
      }
    }
    out.edges.push_back(std::move(path));
  }
  gvFreeLayout(gvc, g);
  agclose(g);
  return out;
}

}  // namespace ddpscope::gui
