// What every worker of the distributed-autograd tests serves: chains across workers, a
// parameter of its own served by RRef, a gradient that fails in backward some workers on,
// the engine's bookkeeping, an embedding table and fresh parameters; and the check that a
// DistributedOptimizer over remote parameters ends where one process ends.
#pragma once

#include <QtTest/QtTest>

#include <atomic>
#include <chrono>
#include <thread>
#include "eventually.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "c10d/process_group.h"
#include "dist_autograd/dist_autograd.h"
#include "dist_autograd/distributed_optimizer.h"
#include "ddp/distributed_data_parallel.h"
#include "nn/models.h"
#include "mpi_test_main.h"
#include "rpc/rpc.h"
#include "tensor/kernels.h"
#include "tensor/random.h"

namespace ddpscope::testing::dist_autograd_workers {

using namespace std::chrono_literals;
using rpc::Value;
using rpc::ValueList;

inline std::shared_ptr<c10d::ProcessGroup> g_world;
inline Tensor g_param;  // each worker's own parameter, served by RRef

inline void barrier() { g_world->barrier()->wait(); }

inline int next_worker(int hops = 1) {
  return (rpc::agent().self().id + hops) % static_cast<int>(rpc::agent().workers().size());
}

// The chain's maths, shared by the RPC version and the local reference:
// chain(0, t) = t * t;  chain(k, t) = chain(k - 1, tanh(t)) + t.
inline Tensor local_chain(int64_t k, const Tensor& t) {
  if (k == 0) return mul(t, t);
  return add(local_chain(k - 1, tanh(t)), t);
}

inline double diff(const Tensor& a, const Tensor& b) { return kernels::max_abs_diff(a, b); }

inline void register_functions() {
  rpc::register_function("dat.chain", [](const ValueList& a) -> Value {
    const int64_t k = a.at(0).to_int();
    const Tensor& t = a.at(1).tensor();
    if (k == 0) return mul(t, t);
    Tensor r = rpc::rpc_sync(next_worker(), "dat.chain", {Value(k - 1), Value(tanh(t))}).tensor();
    return add(r, t);
  });
  rpc::register_function("dat.param", [](const ValueList&) -> Value { return g_param; });
  rpc::register_function("dat.param_grad", [](const ValueList& a) -> Value {
    Tensor g = dist_autograd::get_gradient(a.at(0).to_int(), g_param);
    return g.defined() ? Value(g) : Value();
  });
  rpc::register_function("dat.param_grad_field",
                         [](const ValueList&) -> Value { return Value(g_param.grad().defined()); });
  // A square whose gradient fails in backward, `hops` workers further on.
  rpc::register_function("dat.fail_in_backward", [](const ValueList& a) -> Value {
    const int64_t hops = a.at(0).to_int();
    const Tensor& t = a.at(1).tensor();
    if (hops > 0) return rpc::rpc_sync(next_worker(), "dat.fail_in_backward", {Value(hops - 1), Value(t)});
    Tensor r = mul(t, t);
    r.register_hook(
        [](const Tensor&) -> std::optional<Tensor> { throw Error("boom in backward", __FILE__, __LINE__); });
    return r;
  });
  rpc::register_function("dat.passes_held",
                         [](const ValueList&) -> Value { return Value(dist_autograd::debug_info().passes_held); });
  rpc::register_function("dat.contexts",
                         [](const ValueList&) -> Value { return Value(dist_autograd::debug_info().contexts); });
  // Worker 0's embedding table, as an RRef (owner -> user).
  rpc::register_function("ddp.table", [](const ValueList&) -> Value {
    static rpc::RRef table = [] {
      Generator gen(7);
      return rpc::make_rref(Value(randn({8, 16}, DType::F32, &gen).set_requires_grad()));
    }();
    return Value(table);
  });
  // A fresh parameter from a seed, owned by whoever runs this (through remote()).
  rpc::register_function("dopt.make", [](const ValueList& a) -> Value {
    Generator gen(static_cast<uint64_t>(a.at(0).to_int()));
    return randn({3, 3}, DType::F32, &gen).set_requires_grad(a.size() < 2 || a.at(1).to_bool());
  });
  // Scales by 3 and adds a tensor that does not require grad.
  rpc::register_function("dat.scale_plus", [](const ValueList& a) -> Value {
    return add(mul_scalar(a.at(0).tensor(), 3.0), a.at(1).tensor());
  });
}

// Joins RPC as this rank's worker, with its own parameter and the functions above.
inline void start_worker(int rank) {
  manual_seed(1234 + static_cast<uint64_t>(rank));
  g_param = randn({3, 3}).set_requires_grad();
  register_functions();
  rpc::RpcBackendOptions options;
  options.rpc_timeout = 20000ms;
  options.num_worker_threads = 2;
  rpc::init_rpc("", options, g_world);
}

inline Tensor rand33() { return randn({3, 3}).set_requires_grad(); }

// DistributedOptimizer over parameters on worker 1, the last worker and worker 0 itself
// ends where one process running the same optimizer on the same losses ends.
inline void optimizer_matches_a_local_run(int workers) {
  using dist_autograd::OptimizerSpec;
  const OptimizerSpec specs[] = {OptimizerSpec::sgd_with({.lr = 0.05, .momentum = 0.9}),
                                 OptimizerSpec::adam_with({.lr = 0.01}),
                                 OptimizerSpec::adamw_with({.lr = 0.01, .weight_decay = 0.1})};
  for (const auto& spec : specs) {
    rpc::RRef r1 = rpc::remote(1, "dopt.make", {Value(int64_t{11})});
    rpc::RRef r2 = rpc::remote(workers - 1, "dopt.make", {Value(int64_t{22})});
    rpc::RRef r3 = rpc::make_rref(Value(randn({3, 3}).set_requires_grad()));
    // The same starting values, for the one-process reference.
    std::vector<Tensor> local = {r1.to_here().tensor().detach().clone().set_requires_grad(),
                                 r2.to_here().tensor().detach().clone().set_requires_grad(),
                                 r3.to_here().tensor().detach().clone().set_requires_grad()};
    auto loss_of = [](const Tensor& a, const Tensor& b, const Tensor& c) {
      return sum(add(mul(mul(a, b), c), tanh(a)));
    };
    std::unique_ptr<optim::Optimizer> reference;
    if (spec.kind == OptimizerSpec::Kind::Sgd) reference = std::make_unique<optim::SGD>(local, spec.sgd);
    if (spec.kind == OptimizerSpec::Kind::Adam) reference = std::make_unique<optim::Adam>(local, spec.adam);
    if (spec.kind == OptimizerSpec::Kind::AdamW) reference = std::make_unique<optim::AdamW>(local, spec.adam);
    dist_autograd::DistributedOptimizer opt(spec, {r1, r2, r3});
    for (int step = 0; step < 3; ++step) {
      {
        dist_autograd::ContextGuard context;
        Tensor loss = loss_of(r1.to_here().tensor(), r2.to_here().tensor(), r3.to_here().tensor());
        dist_autograd::backward(context.id(), {loss});
        opt.step(context.id());
      }
      reference->zero_grad();
      loss_of(local[0], local[1], local[2]).backward();
      reference->step();
    }
    QVERIFY(diff(r1.to_here().tensor(), local[0]) < 1e-6);
    QVERIFY(diff(r2.to_here().tensor(), local[1]) < 1e-6);
    QVERIFY(diff(r3.to_here().tensor(), local[2]) < 1e-6);
    QVERIFY(!r3.local_value().tensor().grad().defined());  // steps never leave .grad behind
  }
  // A parameter that cannot be optimised: the owner's error reaches the caller.
  rpc::RRef frozen = rpc::remote(1, "dopt.make", {Value(int64_t{5}), Value(false)});
  try {
    dist_autograd::DistributedOptimizer opt(OptimizerSpec::sgd_with({.lr = 0.1}), {frozen});
    QFAIL("an optimizer over a tensor without grad was made");
  } catch (const rpc::RpcError& e) {
    QVERIFY2(QString::fromStdString(e.message()).startsWith("Error on worker 1 (worker1): DistributedOptimizer:"),
             e.what());
  }
}

}  // namespace ddpscope::testing::dist_autograd_workers
