// GraphData: a recorded autograd graph for the graph view: nodes with their kind,
// dependency count and, from the AutogradNode spans of the same iteration, how long each
// ran; and the same graph collapsed by module for large models. A distributed graph is
// one pass of a distributed autograd context: every worker's graph (a cluster each),
// joined where a recv function on one worker sends its gradient to the send function of
// the same autograd message id on another. Plain data, no Qt.
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
  int rank = -1;        // a distributed graph's node: its worker (cluster)
  int64_t msg_id = -1;  // send/recv: the autograd message id shared with the other end
  int peer = -1;        // send/recv: the other end's worker
};

struct GraphEdge {
  int64_t src = 0, dst = 0;  // gradient flows src -> dst (ids)
};

struct GraphData {
  int rank = 0;
  int64_t iteration = -1;  // a distributed graph: the pass id
  int64_t ctx_id = -1;     // a distributed graph: its context
  bool distributed = false;
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
  bool collapsed = false;
};

// The first graph `rank` recorded (empty nodes when none).
GraphData loadGraph(probes::RunStoreReader& run, int rank, int64_t iteration = -1);

// The distributed graphs a run recorded: one per (context, pass), with its workers.
struct GraphChoice {
  int64_t ctx_id = -1;
  int64_t pass = -1;
  std::vector<int> ranks;
};
std::vector<GraphChoice> listDistGraphs(probes::RunStoreReader& run);
// "context 0:1 · pass 0:1 · workers 0, 1"
std::string describeChoice(const GraphChoice& choice);
// Every worker's graph of `pass` of context `ctx_id`, node ids renumbered (0..n-1), each
// recv -> send pair across workers an edge; execution times from the nodes' spans of
// that context.
GraphData loadDistGraph(probes::RunStoreReader& run, int64_t ctx_id, int64_t pass);

// One node per module (operations join the module of the parameters their gradient
// reaches first); edges between modules, without duplicates or self-loops. In a
// distributed graph modules are per worker, and send and recv nodes stay themselves (the
// joints between workers).
GraphData collapseByModule(const GraphData& graph);

// "0:5": a global id (context, pass, message: worker << 48 | counter) as worker:counter;
// "reply to 0:5" for the autograd message id of a reply (its request's with bit 47 set).
std::string formatGlobalId(int64_t id);

// The module of a parameter name: "module.layers.2.weight" -> "module.layers.2".
std::string moduleOfParameter(const std::string& name);

}  // namespace ddpscope::gui
