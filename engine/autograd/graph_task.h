// GraphTask: the state of one backward pass: how many gradients each node still waits
// for, the gradients collected so far, the queue of nodes ready to run, and callbacks
// to run at the end.
//
// One thread (the one that called backward) runs the nodes. Other threads may deliver
// gradients into a running task (distributed autograd: gradients arriving over RPC) with
// deliver(); they bracket their pending work with hold()/release() so the task does not
// finish while a delivery is still to come. All public methods are thread-safe.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <vector>

#include "input_buffer.h"
#include "node.h"

namespace ddpscope::autograd {

class GraphTask {
 public:
  explicit GraphTask(bool keep_graph) : keep_graph_(keep_graph) {}

  // Counts, for every node reachable from `root`, the edges that lead into it.
  void compute_dependencies(Node* root);
  // The same from several starts at once (distributed autograd's FAST mode: the roots'
  // GraphRoot and every send function of the context).
  void compute_dependencies(const std::vector<Node*>& starts);
  // Where leaf gradients go instead of .grad (distributed autograd: into the context).
  // The leaf's hooks still run first. Set before run().
  using LeafSink = std::function<void(const Tensor& leaf, Tensor grad)>;
  void set_leaf_sink(LeafSink sink) { leaf_sink_ = std::move(sink); }
  // The dependency count of every node that has one (for probes and teaching views).
  std::unordered_map<Node*, int> dependencies() const;
  bool has_leaf_sink() const { return static_cast<bool>(leaf_sink_); }
  // Distributed autograd runs a task several times (once per arriving gradient): its
  // callbacks (DDP's finalize) wait until its owner calls run_callbacks() at the end of
  // the worker's share of the pass, instead of running at the end of each run().
  void set_defer_callbacks(bool defer) { defer_callbacks_ = defer; }
  // For the run file: this task runs a distributed pass of context `ctx_id`. Its node
  // spans carry the context; with `record_dependencies`, each dependency count falling
  // is an instant too (what the teaching view replays).
  void set_probe_context(int64_t ctx_id, bool record_dependencies) {
    probe_ctx_ = ctx_id;
    record_dependencies_ = record_dependencies;
  }
  void run_callbacks();
  // Restricts execution to the nodes that lead to `targets` (empty: run everything).
  // Gradients arriving at a target edge are captured; `accumulate` says whether leaf
  // targets' AccumulateGrad still runs (backward(inputs)) or not (grad()).
  void set_targets(Node* root, const edge_list& targets, bool accumulate);

  void deliver(const Edge& edge, Tensor grad);
  void push_ready(std::shared_ptr<Node> node, InputBuffer inputs);
  void hold();
  void release();
  void queue_callback(std::function<void()> callback);
  bool has_callbacks() const;

  // Runs ready nodes on the calling thread until nothing is queued or held, then the
  // final callbacks. Rethrows the first error of any node.
  void run();

  variable_list captured() const { return captured_; }
  // A plain backward: no targets, so every reached node runs, AccumulateGrad included.
  bool runs_every_node() const { return exec_info_.empty(); }
  bool keep_graph() const { return keep_graph_; }
  // The task whose nodes the calling thread is running (null outside backward).
  static GraphTask* current();

 private:
  struct ReadyTask {
    std::shared_ptr<Node> node;
    InputBuffer inputs;
  };
  struct LaterFirst {
    bool operator()(const ReadyTask& a, const ReadyTask& b) const {
      return a.node->sequence_nr() < b.node->sequence_nr();
    }
  };
  struct ExecInfo {
    bool needed = false;
    // (input_nr of this node, index into captured_) for target edges ending here.
    std::vector<std::pair<uint32_t, size_t>> captures;
    bool run_node = true;
  };

  void evaluate(ReadyTask& task);
  bool should_run(Node* node) const;

  const bool keep_graph_;
  mutable std::mutex mutex_;
  std::condition_variable ready_cv_;
  std::priority_queue<ReadyTask, std::vector<ReadyTask>, LaterFirst> ready_;
  std::unordered_map<Node*, int> dependencies_;
  std::unordered_map<Node*, InputBuffer> not_ready_;
  std::unordered_map<Node*, ExecInfo> exec_info_;
  variable_list captured_;
  int holds_ = 0;
  std::vector<std::function<void()>> callbacks_;
  LeafSink leaf_sink_;
  bool defer_callbacks_ = false;
  int64_t probe_ctx_ = -1;
  bool record_dependencies_ = false;
};

}  // namespace ddpscope::autograd
