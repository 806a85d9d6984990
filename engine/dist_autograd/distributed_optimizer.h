// DistributedOptimizer (seed 000): one optimizer over parameters that live on several
// workers, each held by an RRef. It makes one local optimizer per owner, over that
// owner's parameters; step(context) has every owner apply the gradients that context
// accumulated there (never .grad), and returns when all have, raising the first error.
// Concurrent steps on one worker are serialised by a lock.
//
//   dist_autograd::DistributedOptimizer opt(OptimizerSpec::sgd({.lr = 0.05}), {rref1, rref2});
//   {
//     dist_autograd::ContextGuard context;
//     Tensor loss = sum(add(rref1.to_here().tensor(), rref2.to_here().tensor()));
//     dist_autograd::backward(context.id(), {loss});
//     opt.step(context.id());
//   }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "optim/optimizer.h"
#include "rpc/rref.h"

namespace ddpscope::dist_autograd {

struct OptimizerSpec {
  enum class Kind { Sgd, Adam, AdamW };
  Kind kind = Kind::Sgd;
  optim::SgdOptions sgd;
  optim::AdamOptions adam;
  static OptimizerSpec sgd_with(optim::SgdOptions o) { return {Kind::Sgd, o, {}}; }
  static OptimizerSpec adam_with(optim::AdamOptions o) { return {Kind::Adam, {}, o}; }
  static OptimizerSpec adamw_with(optim::AdamOptions o) { return {Kind::AdamW, {}, o}; }
};

class DistributedOptimizer {
 public:
  // Every RRef must hold a leaf tensor that requires grad.
  DistributedOptimizer(OptimizerSpec spec, const std::vector<rpc::RRef>& params);
  ~DistributedOptimizer();  // drops the local optimizers on their owners
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  void step(int64_t context_id);

 private:
  struct Remote {
    int32_t owner;
    int64_t id;  // the local optimizer's id on its owner
  };
  std::vector<Remote> remotes_;
};

}  // namespace ddpscope::dist_autograd
