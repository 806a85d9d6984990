#include "graph_data.h"

#include <algorithm>
#include <map>
#include <set>

namespace ddpscope::gui {

std::string formatGlobalId(int64_t id) {
  // An autograd message id of a reply is its request's with bit 47 set (engine/rpc).
  constexpr uint64_t kReplyBit = uint64_t{1} << 47;
  const auto u = static_cast<uint64_t>(id);
  const std::string base = std::to_string(u >> 48) + ":" + std::to_string(u & (kReplyBit - 1));
  return u & kReplyBit ? "reply to " + base : base;
}

std::string moduleOfParameter(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? std::string("(model)") : name.substr(0, dot);
}

namespace {

// "AccumulateGrad(module.layers.4.weight): ..." -> "module.layers.4.weight".
std::string parameterOf(const std::string& op) {
  const auto open = op.find('(');
  const auto close = op.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  return op.substr(open + 1, close - open - 1);
}

// Operations take the module of the first parameter their gradient reaches: walk the
// graph from the accumulators back towards the root, in reverse breadth-first order.
void assignModules(GraphData& g) {
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    index[g.nodes[i].id] = i;
  std::map<int64_t, std::vector<int64_t>> children;
  for (const auto& e : g.edges)
    children[e.src].push_back(e.dst);
  for (auto& n : g.nodes) {
    if (n.kind == "accumulate_grad") n.module = moduleOfParameter(parameterOf(n.op));
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
  if (!g.distributed) return;
  for (auto& n : g.nodes)
    n.module = "worker " + std::to_string(n.rank) + " · " + n.module;
}

}  // namespace

GraphData loadGraph(probes::RunStoreReader& run, int rank, int64_t iteration) {
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
  for (const auto& s : run.spans({.kinds = {probes::Kind::AutogradNode}, .rank = rank, .iteration = rows.iteration})) {
    const auto it = by_seq.find(s.seq);
    if (it != by_seq.end()) g.nodes[it->second].exec_ms = (s.t_end_ns - s.t_begin_ns) / 1e6;
  }
  assignModules(g);
  return g;
}

std::vector<GraphChoice> listDistGraphs(probes::RunStoreReader& run) {
  std::vector<GraphChoice> out;
  for (const auto& g : run.graph_index()) {  // by context, pass, rank
    if (g.ctx_id < 0) continue;
    if (out.empty() || out.back().ctx_id != g.ctx_id || out.back().pass != g.iteration)
      out.push_back({g.ctx_id, g.iteration, {}});
    out.back().ranks.push_back(g.rank);
  }
  return out;
}

std::string describeChoice(const GraphChoice& c) {
  std::string s = "context " + formatGlobalId(c.ctx_id) + " · pass " + formatGlobalId(c.pass) + " · worker";
  s += c.ranks.size() == 1 ? " " : "s ";
  for (size_t i = 0; i < c.ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(c.ranks[i]);
  return s;
}

GraphData loadDistGraph(probes::RunStoreReader& run, int64_t ctx_id, int64_t pass) {
  GraphData g;
  g.ctx_id = ctx_id;
  g.iteration = pass;
  g.distributed = true;
  std::vector<int> ranks;
  for (const auto& c : listDistGraphs(run)) {
    if (c.ctx_id == ctx_id && c.pass == pass) ranks = c.ranks;
  }
  g.rank = ranks.empty() ? 0 : ranks.front();
  // (rank, msg id) -> node index, for the send and recv ends.
  std::map<std::pair<int, int64_t>, size_t> sends;
  std::vector<size_t> recvs;
  for (int rank : ranks) {
    const probes::GraphRows rows = run.graph(rank, ctx_id, pass);
    if (rows.iteration != pass) continue;  // graph() gives the earliest pass at or after
    std::map<int64_t, int64_t> renumber;
    std::map<int64_t, size_t> by_seq;
    for (const auto& n : rows.nodes) {
      const auto index = static_cast<int64_t>(g.nodes.size());
      renumber[n.id] = index;
      by_seq[n.sequence_nr] = g.nodes.size();
      GraphNode node{index, n.op, n.kind, n.deps, n.sequence_nr, -1, {}, 1, rank, n.msg_id, n.peer};
      if (n.kind == "send") sends[{rank, n.msg_id}] = g.nodes.size();
      if (n.kind == "recv") recvs.push_back(g.nodes.size());
      g.nodes.push_back(node);
    }
    for (const auto& e : rows.edges)
      g.edges.push_back({renumber.at(e.src), renumber.at(e.dst)});
    // Execution times: the node spans of this context on this worker (schema 4).
    for (const auto& s : run.spans({.kinds = {probes::Kind::AutogradNode}, .rank = rank})) {
      if (s.ctx_id != ctx_id) continue;
      const auto it = by_seq.find(s.seq);
      if (it != by_seq.end() && g.nodes[it->second].exec_ms < 0)
        g.nodes[it->second].exec_ms = (s.t_end_ns - s.t_begin_ns) / 1e6;
    }
  }
  // A recv function's gradient goes to the send function of its message on its peer.
  for (size_t r : recvs) {
    const GraphNode& recv = g.nodes[r];
    const auto send = sends.find({recv.peer, recv.msg_id});
    if (send != sends.end()) g.edges.push_back({recv.id, g.nodes[send->second].id});
  }
  assignModules(g);
  return g;
}

GraphData collapseByModule(const GraphData& input) {
  GraphData graph = input;
  if (std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const GraphNode& n) { return n.module.empty(); })) {
    assignModules(graph);
  }
  GraphData out;
  out.rank = graph.rank;
  out.iteration = graph.iteration;
  out.ctx_id = graph.ctx_id;
  out.distributed = graph.distributed;
  out.collapsed = true;
  std::map<std::string, size_t> module_node;
  std::map<int64_t, int64_t> node_to_module;
  for (const auto& n : graph.nodes) {
    // Send and recv nodes are the joints between workers: each stays itself.
    const bool joint = n.kind == "send" || n.kind == "recv";
    const std::string key = joint ? n.module + " · " + n.op + " " + std::to_string(n.id) : n.module;
    auto [it, inserted] = module_node.try_emplace(key, out.nodes.size());
    if (inserted) {
      GraphNode m = n;
      m.id = static_cast<int64_t>(out.nodes.size());
      if (!joint) {
        m.op = n.module;
        m.kind = "module";
        m.members = 0;
        m.exec_ms = 0;
      }
      m.deps = 0;  // counted from the collapsed edges below
      out.nodes.push_back(m);
      if (joint) {
        node_to_module[n.id] = m.id;
        continue;
      }
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
