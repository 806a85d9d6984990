#include "graph_data.h"

#include <algorithm>
#include <map>
#include <set>

namespace ddpscope::gui {

std::string module_of_parameter(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? std::string("(model)") : name.substr(0, dot);
}

namespace {

// "AccumulateGrad(module.layers.4.weight): ..." -> "module.layers.4.weight".
std::string parameter_of(const std::string& op) {
  const auto open = op.find('(');
  const auto close = op.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  return op.substr(open + 1, close - open - 1);
}

// Operations take the module of the first parameter their gradient reaches: walk the
// graph from the accumulators back towards the root, in reverse breadth-first order.
void assign_modules(GraphData& g) {
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    index[g.nodes[i].id] = i;
  std::map<int64_t, std::vector<int64_t>> children;
  for (const auto& e : g.edges)
    children[e.src].push_back(e.dst);
  for (auto& n : g.nodes) {
    if (n.kind == "accumulate_grad") n.module = module_of_parameter(parameter_of(n.op));
  }
  // Node ids are in breadth-first order from the root: children come later.
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    if (!it->module.empty()) continue;
    for (int64_t c : children[it->id]) {
      const auto& child = g.nodes[index[c]];
      if (!child.module.empty()) {
        it->module = child.module;
        break;
      }
    }
  }
  for (auto& n : g.nodes) {
    if (n.module.empty()) n.module = "(loss)";
  }
}

}  // namespace

GraphData load_graph(probes::RunStoreReader& run, int rank, int64_t iteration) {
  GraphData g;
  const probes::GraphRows rows = run.graph(rank, -1, iteration);
  g.rank = rank;
  g.iteration = rows.iteration;
  std::map<int64_t, size_t> by_seq;
  for (const auto& n : rows.nodes) {
    by_seq[n.sequence_nr] = g.nodes.size();
    g.nodes.push_back({n.id, n.op, n.kind, n.deps, n.sequence_nr, -1, {}, 1});
  }
  for (const auto& e : rows.edges)
    g.edges.push_back({e.src, e.dst});
  if (g.nodes.empty()) return g;
  // Execution times: the AutogradNode spans of that iteration carry the sequence number.
  for (const auto& s : run.spans(
           {.kinds = {probes::Kind::AutogradNode}, .rank = rank, .iteration = rows.iteration})) {
    const auto it = by_seq.find(s.seq);
    if (it != by_seq.end()) g.nodes[it->second].exec_ms = (s.t_end_ns - s.t_begin_ns) / 1e6;
  }
  assign_modules(g);
  return g;
}

GraphData collapse_by_module(const GraphData& input) {
  GraphData graph = input;
  if (std::any_of(graph.nodes.begin(), graph.nodes.end(),
                  [](const GraphNode& n) { return n.module.empty(); })) {
    assign_modules(graph);
  }
  GraphData out;
  out.rank = graph.rank;
  out.iteration = graph.iteration;
  out.collapsed = true;
  std::map<std::string, size_t> module_node;
  std::map<int64_t, int64_t> node_to_module;
  for (const auto& n : graph.nodes) {
    auto [it, inserted] = module_node.try_emplace(n.module, out.nodes.size());
    if (inserted) {
      GraphNode m;
      m.id = static_cast<int64_t>(out.nodes.size());
      m.op = n.module;
      m.kind = "module";
      m.module = n.module;
      m.members = 0;
      m.exec_ms = 0;
      out.nodes.push_back(m);
    }
    GraphNode& m = out.nodes[it->second];
    ++m.members;
    if (n.exec_ms > 0) m.exec_ms += n.exec_ms;
    node_to_module[n.id] = m.id;
  }
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const auto& e : graph.edges) {
    const int64_t a = node_to_module[e.src], b = node_to_module[e.dst];
    if (a != b && seen.insert({a, b}).second) out.edges.push_back({a, b});
  }
  for (const auto& e : out.edges)
    ++out.nodes[static_cast<size_t>(e.dst)].deps;
  return out;
}

}  // namespace ddpscope::gui
