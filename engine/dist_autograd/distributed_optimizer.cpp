#include "distributed_optimizer.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "context.h"
#include "rpc/rpc.h"

namespace ddpscope::dist_autograd {
namespace {

using rpc::Value;
using rpc::ValueList;

constexpr const char* kCreate = "_ddpscope.dist_optim.create";
constexpr const char* kStep = "_ddpscope.dist_optim.step";
constexpr const char* kDrop = "_ddpscope.dist_optim.drop";

// The local optimizers this worker owns for DistributedOptimizers anywhere.
struct LocalOptimizers {
  std::mutex mutex;  // serialises steps (and guards the map)
  std::map<int64_t, std::unique_ptr<optim::Optimizer>> by_id;
  int64_t next = 1;
};
LocalOptimizers& locals() {
  static auto* l = new LocalOptimizers();  // leaked: RPC threads may outlive main
  return *l;
}

ValueList spec_values(const OptimizerSpec& s) {
  ValueList v;
  v.emplace_back(static_cast<int64_t>(s.kind));
  for (double x : {s.sgd.lr, s.sgd.momentum, s.sgd.dampening, s.sgd.weight_decay, s.adam.lr, s.adam.beta1, s.adam.beta2,
                   s.adam.eps, s.adam.weight_decay})
    v.emplace_back(x);
  v.emplace_back(s.sgd.nesterov);
  return v;
}

OptimizerSpec spec_from(const ValueList& v) {
  DDPSCOPE_CHECK(v.size() == 11, "DistributedOptimizer: a malformed optimizer description");
  OptimizerSpec s;
  s.kind = static_cast<OptimizerSpec::Kind>(v[0].to_int());
  s.sgd = {v[1].to_double(), v[2].to_double(), v[3].to_double(), v[4].to_double(), v[10].to_bool()};
  s.adam = {v[5].to_double(), v[6].to_double(), v[7].to_double(), v[8].to_double(), v[9].to_double()};
  return s;
}

// [spec, [rrefs...]] -> the new local optimizer's id.
Value create_local(const ValueList& a) {
  const OptimizerSpec spec = spec_from(a.at(0).list());
  std::vector<Tensor> params;
  for (const auto& r : a.at(1).list()) {
    Tensor p = r.rref().local_value().tensor();
    DDPSCOPE_CHECK(p.requires_grad() && p.is_leaf(), "DistributedOptimizer: ", r.rref().describe(), " holds ",
                   p.describe(), ", which is not a leaf that requires grad");
    params.push_back(p);
  }
  std::unique_ptr<optim::Optimizer> opt;
  switch (spec.kind) {
    case OptimizerSpec::Kind::Sgd: opt = std::make_unique<optim::SGD>(params, spec.sgd); break;
    case OptimizerSpec::Kind::Adam: opt = std::make_unique<optim::Adam>(params, spec.adam); break;
    case OptimizerSpec::Kind::AdamW: opt = std::make_unique<optim::AdamW>(params, spec.adam); break;
  }
  auto& l = locals();
  std::lock_guard<std::mutex> lock(l.mutex);
  const int64_t id = l.next++;
  l.by_id[id] = std::move(opt);
  return Value(id);
}

// [id, ctx_id]: one step with the context's gradients in place of .grad.
Value step_local(const ValueList& a) {
  auto ctx = ContextContainer::instance().retrieve(a.at(1).to_int());
  auto& l = locals();
  std::lock_guard<std::mutex> lock(l.mutex);
  auto it = l.by_id.find(a.at(0).to_int());
  DDPSCOPE_CHECK(it != l.by_id.end(), "DistributedOptimizer: no local optimizer ", a.at(0).to_int(),
                 " on this worker (dropped already?)");
  optim::Optimizer& opt = *it->second;
  std::vector<Tensor> saved;
  for (const Tensor& p : opt.params()) {
    saved.push_back(p.grad());
    p.set_grad(ctx->gradient(p));  // undefined: no gradient in this context, skipped
  }
  try {
    opt.step();
  } catch (...) {
    for (size_t i = 0; i < saved.size(); ++i)
      opt.params()[i].set_grad(saved[i]);
    throw;
  }
  for (size_t i = 0; i < saved.size(); ++i)
    opt.params()[i].set_grad(saved[i]);
  return Value();
}

Value drop_local(const ValueList& a) {
  auto& l = locals();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.by_id.erase(a.at(0).to_int());
  return Value();
}

const bool g_registered = [] {
  rpc::register_function(kCreate, create_local);
  rpc::register_function(kStep, step_local);
  rpc::register_function(kDrop, drop_local);
  return true;
}();

}  // namespace

DistributedOptimizer::DistributedOptimizer(OptimizerSpec spec, const std::vector<rpc::RRef>& params) {
  (void)g_registered;
  DDPSCOPE_CHECK(!params.empty(), "DistributedOptimizer: no parameters");
  std::map<int32_t, ValueList> by_owner;
  for (const auto& r : params) {
    DDPSCOPE_CHECK(r.defined(), "DistributedOptimizer: an undefined RRef among the parameters");
    by_owner[r.owner()].emplace_back(r);
  }
  std::vector<std::pair<int32_t, std::shared_ptr<rpc::ValueFuture>>> made;
  for (auto& [owner, rrefs] : by_owner) {
    ValueList args;
    args.emplace_back(spec_values(spec));
    args.emplace_back(std::move(rrefs));
    made.emplace_back(owner, rpc::rpc_async(owner, kCreate, std::move(args)));
  }
  for (auto& [owner, fut] : made)
    remotes_.push_back({owner, fut->wait().to_int()});
}

DistributedOptimizer::~DistributedOptimizer() {
  if (!rpc::is_initialized()) return;
  for (const auto& r : remotes_) {
    try {
      rpc::rpc_async(r.owner, kDrop, {Value(r.id)});
    } catch (const std::exception&) {
      // The owner is gone or RPC is shutting down: its optimizer goes with it.
    }
  }
}

void DistributedOptimizer::step(int64_t context_id) {
  ContextContainer::instance().retrieve(context_id);  // a clear error for an unknown id here
  std::vector<std::shared_ptr<rpc::ValueFuture>> steps;
  for (const auto& r : remotes_)
    steps.push_back(rpc::rpc_async(r.owner, kStep, {Value(r.id), Value(context_id)}));
  std::exception_ptr first;
  for (auto& s : steps) {
    try {
      s->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace ddpscope::dist_autograd
