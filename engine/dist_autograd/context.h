// DistAutogradContext: what one distributed forward + backward leaves on one worker
// (seed 000, "Distributed Autograd Context"): the send and recv functions recorded by
// the context's RPCs (which keeps their graphs alive), the workers it exchanged messages
// with (to release it there too), the gradients of its backward passes (never in .grad),
// and the state of the pass running here.
//
// Contexts live in the process-wide container below. Ids are (worker id << 48) | counter,
// so every worker can make them without asking anyone. One context at a time is the
// current one of a thread; ContextGuard (dist_autograd.h) opens and releases it.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "autograd/graph_task.h"
#include "tensor/tensor.h"

namespace ddpscope::dist_autograd {

class SendFunction;
class RecvFunction;

class DistAutogradContext {
 public:
  explicit DistAutogradContext(int64_t id) : id_(id) {}
  int64_t id() const { return id_; }

  // Forward: a send or recv function of this context, by the autograd message id
  // shared by the pair; the worker at the other end becomes known.
  void add_send(int64_t autograd_id, std::shared_ptr<SendFunction> fn, int32_t peer);
  void add_recv(int64_t autograd_id, std::shared_ptr<RecvFunction> fn, int32_t peer);
  void add_known_worker(int32_t worker);
  // Throws naming the id when this context has no such send function.
  std::shared_ptr<SendFunction> send_function(int64_t autograd_id) const;
  std::set<int32_t> known_workers() const;

  // Backward: gradients of leaves accumulate here, keyed by the leaf.
  void accumulate_grad(const Tensor& leaf, const Tensor& grad);
  std::vector<std::pair<Tensor, Tensor>> gradients() const;  // (leaf, gradient)
  Tensor gradient(const Tensor& leaf) const;                 // undefined when none
  // Replaces the leaf's gradient (DDP writes its averaged gradients back here).
  void set_gradient(const Tensor& leaf, Tensor grad);

  // The graph task of backward pass `pass` on this worker, made on first use in that
  // pass (`made` says whether this call made it) with dependencies counted from
  // `extra_start` (the roots, on the worker that called backward) and the pass's send
  // functions: in SMART mode the ones activated for it, in FAST mode all of them.
  std::shared_ptr<autograd::GraphTask> graph_task(int64_t pass, bool retain_graph, autograd::Node* extra_start,
                                                  bool* made);
  // Drops the state of `pass` here after an error elsewhere; later gradients for it are
  // refused. False when this worker held nothing of that pass.
  bool abandon(int64_t pass);
  bool holds_pass() const;
  // SMART mode: marks send functions as on a path to the roots in `pass`; returns those
  // not marked before. Nodes already searched from are remembered (`searched`).
  std::vector<std::shared_ptr<SendFunction>> activate(int64_t pass, const std::vector<int64_t>& autograd_ids);
  bool first_search(int64_t pass, autograd::Node* node);
  // Which send functions ran in `pass`, and which of the pass's sends did not (yet).
  void mark_send_run(int64_t pass, int64_t autograd_id);
  struct SendReport {
    std::set<int64_t> ran;
    std::map<int64_t, std::shared_ptr<SendFunction>> not_run;
  };
  SendReport send_report(int64_t pass) const;
  std::mutex& run_mutex() { return run_mutex_; }

 private:
  const int64_t id_;
  mutable std::mutex mutex_;
  std::map<int64_t, std::shared_ptr<SendFunction>> sends_;
  std::map<int64_t, std::shared_ptr<RecvFunction>> recvs_;
  std::set<int32_t> known_workers_;
  struct Accumulated {
    Tensor leaf;
    Tensor grad;
  };
  std::unordered_map<const void*, Accumulated> grads_;  // by the leaf's TensorImpl
  // The pass running here (or last run), and what it knows.
  void reset_pass_locked(int64_t pass);
  int64_t pass_ = -1;
  std::shared_ptr<autograd::GraphTask> task_;
  bool smart_ = false;                        // activate() was called for pass_
  std::set<int64_t> active_;                  // SMART: sends on a path to the roots
  std::set<const autograd::Node*> searched_;  // SMART: nodes already searched from
  std::set<int64_t> sends_run_;
  std::set<int64_t> abandoned_;  // passes dropped after an error
  std::mutex run_mutex_;
};

// The contexts of this process. Unknown ids give "no distributed autograd context with id N".
class ContextContainer {
 public:
  static ContextContainer& instance();
  void set_worker_id(int32_t worker);
  int32_t worker_id() const { return worker_id_; }

  // A new context, made the calling thread's current one. Throws, naming it, when the
  // thread already has one open.
  std::shared_ptr<DistAutogradContext> open();
  std::shared_ptr<DistAutogradContext> retrieve(int64_t id) const;
  std::shared_ptr<DistAutogradContext> find(int64_t id) const;  // null when unknown
  // A context released here already comes back as a detached one, never stored.
  std::shared_ptr<DistAutogradContext> get_or_create(int64_t id);
  // Forgets the context here; returns it (null when it was not here).
  std::shared_ptr<DistAutogradContext> erase(int64_t id);
  size_t size() const;
  size_t passes_held() const;  // contexts holding the state of a pass
  // Forgets every context that worker `origin` started (it died: no release will come).
  // Returns how many.
  size_t erase_started_by(int32_t origin);

  static int64_t current_id();  // the calling thread's context, -1 for none
  static void set_current_id(int64_t id);

  // Makes `id` (-1: none) the calling thread's context until destroyed, then restores
  // the one before.
  class ScopedCurrent {
   public:
    explicit ScopedCurrent(int64_t id) : previous_(current_id()) { set_current_id(id); }
    ~ScopedCurrent() { set_current_id(previous_); }
    ScopedCurrent(const ScopedCurrent&) = delete;
    ScopedCurrent& operator=(const ScopedCurrent&) = delete;

   private:
    int64_t previous_;
  };

 private:
  void remember_released_locked(int64_t id);
  int32_t worker_id_ = 0;
  int64_t next_ = 1;
  // Recently released ids: a late message naming one must not bring its context back
  // (it would never be released again). Bounded; ids are never reused.
  std::set<int64_t> released_;
  std::deque<int64_t> released_order_;
  mutable std::mutex mutex_;
  std::unordered_map<int64_t, std::shared_ptr<DistAutogradContext>> contexts_;
};

}  // namespace ddpscope::dist_autograd
