// The distributed backward engine (FAST mode, seed 000). Internal to dist_autograd.
//
// Every worker runs its part of a pass in one GraphTask per (context, pass), made when
// the pass first reaches it, with dependencies counted from the roots (on the worker
// that called backward) and from every send function of the context. A RecvFunction
// sends its gradients to the matching SendFunction's worker; the worker runs that send
// function and whatever it makes ready, then answers once the gradient messages it sent
// in turn are answered (BackwardScope). So the caller's backward returns when the whole
// pass has finished, and an error anywhere travels back along the same replies.
//
// SMART mode (docs/dist-autograd.md) first finds, by an exchange along recv -> send
// pairs, which send functions lie on a path to the roots, and counts dependencies from
// those only.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <memory>
#include <mutex>
#include <vector>

#include "rpc/rref.h"

namespace ddpscope::dist_autograd {

// The RPC functions every worker registers (when dist_autograd is linked in).
inline constexpr const char* kGradientsFunction = "_ddpscope.dist_backward";
inline constexpr const char* kReleaseFunction = "_ddpscope.release_context";
inline constexpr const char* kActivateFunction = "_ddpscope.dist_activate";  // SMART mode
inline constexpr const char* kAbandonFunction = "_ddpscope.dist_abandon";

// What the workers a pass reached say of their send functions: those that ran, and
// those that had not when the worker last answered (described for errors). A send
// that no worker reports as run never received its gradient.
struct PassReport {
  std::set<int64_t> ran;
  std::map<int64_t, std::string> not_run;
  void merge(const PassReport& other);
  rpc::Value to_value() const;
  static PassReport from_value(const rpc::Value& v);
  std::vector<std::string> never_run() const;  // not_run minus ran
};

// One thread's share of a pass: the gradient messages its nodes sent.
class BackwardScope {
 public:
  BackwardScope(int64_t pass, bool retain_graph);
  ~BackwardScope();
  BackwardScope(const BackwardScope&) = delete;
  BackwardScope& operator=(const BackwardScope&) = delete;
  static BackwardScope* current();  // null outside a distributed backward
  int64_t pass() const { return pass_; }
  bool retain_graph() const { return retain_graph_; }
  void add(std::shared_ptr<rpc::ValueFuture> reply);
  // Stops being the calling thread's scope (the destructor does too).
  void leave();
  // Calls `then` once every reply has come (at once when there are none), on the
  // thread of the last, with the first error or the merged reports.
  void when_answered(std::function<void(std::exception_ptr, PassReport)> then);
  // Waits for every reply and merges their reports; rethrows the first error.
  PassReport wait_all();

 private:
  const int64_t pass_;
  const bool retain_graph_;
  BackwardScope* previous_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<rpc::ValueFuture>> replies_;
};

void install_rpc_hooks();  // rpc_autograd_hooks.cpp

}  // namespace ddpscope::dist_autograd
