#include "pass_graph.h"

#include <atomic>
#include <deque>

#include "dist_autograd.h"
#include "probe.h"
#include "records.h"
#include "send_recv_functions.h"

namespace ddpscope::dist_autograd {
namespace {

std::atomic<int64_t> g_graph_limit{-1};
std::atomic<int64_t> g_graphs_recorded{0};

// Within the limit, or asked for by the app.
bool graph_wanted() {
  const int64_t limit = g_graph_limit.load();
  if (limit < 0 || g_graphs_recorded.fetch_add(1) < limit) return true;
  return probes::take_graph_request();
}

}  // namespace

void limit_recorded_graphs(int64_t passes) {
  g_graph_limit = passes;
  g_graphs_recorded = 0;
}

bool record_pass_graph(int64_t ctx_id, int64_t pass, const std::vector<autograd::Node*>& starts,
                       const std::unordered_map<autograd::Node*, int>& dependencies) {
  if (!probes::enabled() || !graph_wanted()) return false;
  std::vector<probes::GraphNodeRecord> nodes;
  std::vector<probes::GraphEdgeRecord> edges;
  std::unordered_map<const autograd::Node*, uint32_t> ids;
  std::deque<autograd::Node*> queue;
  auto visit = [&](autograd::Node* n) {
    auto [it, inserted] = ids.try_emplace(n, static_cast<uint32_t>(nodes.size()));
    if (inserted) {
      probes::GraphNodeRecord r;
      r.id = it->second;
      r.op = n->name();
      r.kind = autograd::node_kind_name(n->kind());
      auto dep = dependencies.find(n);
      r.dependencies = dep == dependencies.end() ? 0 : dep->second;
      r.sequence_nr = n->sequence_nr();
      if (n->kind() == autograd::NodeKind::Send) {
        const auto* s = static_cast<const SendFunction*>(n);
        r.msg_id = s->autograd_id();
        r.peer = s->peer();
      } else if (n->kind() == autograd::NodeKind::Recv) {
        const auto* s = static_cast<const RecvFunction*>(n);
        r.msg_id = s->autograd_id();
        r.peer = s->peer();
      }
      nodes.push_back(std::move(r));
      queue.push_back(n);
    }
    return it->second;
  };
  for (auto* s : starts)
    visit(s);
  while (!queue.empty()) {
    autograd::Node* n = queue.front();
    queue.pop_front();
    const uint32_t src = ids.at(n);
    for (const auto& e : n->next_edges()) {
      if (!e.is_valid()) continue;
      edges.push_back({src, visit(e.function.get()), e.input_nr});
    }
  }
  probes::record_graph(ctx_id, pass, nodes, edges);
  return true;
}

}  // namespace ddpscope::dist_autograd
