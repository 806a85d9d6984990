#include "dist_examples.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "worker_protocol.h"
#include "ddpscope/median.h"
#include "autograd/ops.h"
#include "c10d/process_group.h"
#include "dist_autograd/dist_autograd.h"
#include "dist_autograd/distributed_optimizer.h"
#include "probe.h"
#include "probe_session.h"
#include "rpc/rpc.h"
#include "tensor/random.h"

namespace ddpscope::apps {
namespace {

using rpc::Value;
using rpc::ValueList;
using Json = nlohmann::json;

// This worker's named tensors: its inputs, and their gradients once collected.
struct Named {
  std::mutex mutex;
  std::map<std::string, Tensor> inputs;
  std::map<std::string, Tensor> gradients;
  std::string error;
} g_named;

uint64_t g_seed = 0;
std::vector<double> g_losses;     // parameter-server: this trainer's loss at each step
constexpr int kServerSteps = 20;  // parameter-server: steps per trainer in the shown run

// A reproducible tensor of `shape` for this worker and name (not a parameter).
Tensor data(const std::string& name, const Shape& shape);

// FNV-1a: a name's hash that every build agrees on.
uint64_t stable_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

// An input of this worker (3x3 unless told): data() that requires grad.
Tensor input(const std::string& name, const Shape& shape = {3, 3}) {
  Tensor t = data(name, shape);
  t.set_requires_grad();
  t.set_name(name);  // graphs and lessons show AccumulateGrad(t1), not a bare AccumulateGrad
  return t;
}

Tensor named_input(const std::string& name, const Shape& shape = {3, 3}) {
  {
    std::lock_guard<std::mutex> lock(g_named.mutex);
    auto it = g_named.inputs.find(name);
    if (it != g_named.inputs.end()) return it->second;
  }
  return input(name, shape);
}

Tensor data(const std::string& name, const Shape& shape) {
  Generator gen(g_seed * 1000003 + stable_hash(name) + static_cast<uint64_t>(rpc::agent().self().id) * 7919);
  Tensor t = randn(shape, DType::F32, &gen);
  std::lock_guard<std::mutex> lock(g_named.mutex);
  g_named.inputs[name] = t;
  return t;
}

Json nested(const Tensor& t) {
  const std::vector<float> v = t.to(DType::F32).to_vector<float>();
  const auto& s = t.sizes();
  if (s.size() != 2) return v;
  Json rows = Json::array();
  for (int64_t r = 0; r < s[0]; ++r)
    rows.push_back(std::vector<float>(v.begin() + r * s[1], v.begin() + (r + 1) * s[1]));
  return rows;
}

int world_size() { return static_cast<int>(rpc::agent().workers().size()); }

void register_example_functions() {
  // chain(k, x): worker k scales tanh(x) by its own w, then hands on to the next worker.
  rpc::register_function("example.chain", [](const ValueList& a) -> Value {
    const int64_t left = a.at(0).to_int();
    Tensor y = mul(tanh(a.at(1).tensor()), named_input("w"));
    if (left == 0) return y;
    const int next = rpc::agent().self().id + 1;
    return rpc::rpc_sync(next, "example.chain", {Value(left - 1), Value(y)});
  });
  rpc::register_function("example.param", [](const ValueList&) -> Value { return named_input("p"); });
  // rref: fetch the RRef's value here and multiply by this worker's own y.
  rpc::register_function("example.use_rref", [](const ValueList& a) -> Value {
    Tensor p = a.at(0).rref().to_here().tensor();
    return mul(p, named_input("y"));
  });
  // parameter-server, on a trainer: `steps` steps of least squares X W ~ Y against the
  // server's W (an RRef), each in its own context, stepped by a DistributedOptimizer;
  // with `collect`, the first step's gradients are kept for printing. Returns nothing:
  // the losses go into this trainer's line.
  rpc::register_function("example.train", [](const ValueList& a) -> Value {
    const rpc::RRef& w = a.at(0).rref();
    const int64_t steps = a.at(1).to_int();
    const bool collect = a.at(2).to_bool();
    Tensor x, y;
    {
      std::lock_guard<std::mutex> lock(g_named.mutex);
      auto xi = g_named.inputs.find("X");
      if (xi != g_named.inputs.end()) x = xi->second, y = g_named.inputs.at("Y");
    }
    if (!x.defined()) {
      x = data("X", {16, 4});
      // Targets from a fixed W* (the same on every trainer) plus a little noise.
      Generator truth(424242);
      Tensor w_star = randn({4, 2}, DType::F32, &truth);
      y = add(matmul(x, w_star), mul_scalar(data("noise", {16, 2}), 0.01));
      std::lock_guard<std::mutex> lock(g_named.mutex);
      g_named.inputs.erase("noise");
      g_named.inputs["Y"] = y;
    }
    dist_autograd::DistributedOptimizer opt(dist_autograd::OptimizerSpec::sgd_with({.lr = 0.05}), {w});
    for (int64_t s = 0; s < steps; ++s) {
      dist_autograd::ContextGuard context;
      Tensor err = sub(matmul(x, w.to_here().tensor()), y);
      Tensor loss = mean(mul(err, err));
      dist_autograd::backward(context.id(), {loss});
      if (collect && s == 0) {
        for (int k = 0; k < world_size(); ++k)
          rpc::rpc_sync(k, "example.collect", {Value(context.id())});
      }
      opt.step(context.id());
      std::lock_guard<std::mutex> lock(g_named.mutex);
      g_losses.push_back(loss.item<float>());
    }
    return Value();
  });
  // Before the timed runs: they repeat the shown run's graphs, so the run file keeps no
  // more of them (the app can still ask for one).
  rpc::register_function("example.stop_graphs", [](const ValueList&) -> Value {
    dist_autograd::limit_recorded_graphs(0);
    return Value();
  });
  // The driver asks every worker to keep its gradients of the context for printing.
  rpc::register_function("example.collect", [](const ValueList& a) -> Value {
    const int64_t ctx = a.at(0).to_int();
    std::lock_guard<std::mutex> lock(g_named.mutex);
    for (const auto& [name, t] : g_named.inputs) {
      Tensor g = dist_autograd::get_gradient(ctx, t);
      if (g.defined()) g_named.gradients[name] = g;
    }
    return Value();
  });
}

// One forward + backward of the example inside `context` (parameter-server: one round
// of training steps, each trainer in its own contexts); worker 0 runs it.
void run_once(const std::string& name, dist_autograd::Mode mode, int64_t context) {
  const int n = world_size();
  Tensor loss;
  if (name == "seed") {
    Tensor t1 = named_input("t1"), t2 = named_input("t2");
    Tensor t3 = rpc::rpc_sync("worker1", add, t1, t2).tensor();
    Tensor t4 = named_input("t4");
    loss = sum(mul(t3, t4));
  } else if (name == "chain") {
    Tensor x = named_input("x");
    loss = sum(rpc::rpc_sync(1, "example.chain", {Value(int64_t{n - 2}), Value(x)}).tensor());
  } else if (name == "rref") {
    rpc::RRef p = rpc::remote(n - 1, "example.param");
    Tensor z = rpc::rpc_sync(1, "example.use_rref", {Value(p)}).tensor();
    loss = sum(mul(z, named_input("x")));
  } else if (name == "parameter-server") {
    // Worker 0 serves W; every other worker trains against it at the same time.
    static rpc::RRef w = rpc::make_rref(Value(named_input("W", {4, 2})));
    static bool shown = false;
    const int64_t steps = shown ? 1 : kServerSteps;
    std::vector<std::shared_ptr<rpc::ValueFuture>> trainers;
    for (int k = 1; k < n; ++k)
      trainers.push_back(rpc::rpc_async(k, "example.train", {Value(w), Value(steps), Value(!shown && k == 1)}));
    shown = true;
    for (auto& t : trainers)
      t->wait();
    (void)context;
    (void)mode;
    return;
  } else if (name == "unused-rpc") {
    Tensor a = named_input("a"), b = named_input("b"), c = named_input("c");
    Tensor d = rpc::rpc_sync("worker1", add, a, b).tensor();
    Tensor e = rpc::rpc_sync("worker1", mul, b, c).tensor();  // does not feed the loss
    (void)e;
    loss = sum(d);
  }
  dist_autograd::backward(context, {loss}, false, mode);
}

// Every rank's `text`, on rank 0 (the others get nothing): the workers' lines then reach
// the terminal through one process, so mpirun never interleaves two long lines.
std::vector<std::string> gather_on_first(c10d::ProcessGroup& group, const std::string& text) {
  const int n = group.size();
  std::vector<Tensor> sizes;
  for (int r = 0; r < n; ++r)
    sizes.push_back(Tensor::zeros({1}, DType::I64));
  group.allgather(sizes, Tensor::full({1}, static_cast<double>(text.size()), DType::I64))->wait();
  int64_t longest = 1;
  for (const auto& s : sizes)
    longest = std::max(longest, s.item<int64_t>());
  const int64_t words = (longest + 7) / 8;
  Tensor mine = Tensor::zeros({words}, DType::I64);
  std::memcpy(mine.raw_data(), text.data(), text.size());
  std::vector<Tensor> all;
  for (int r = 0; r < n; ++r)
    all.push_back(Tensor::zeros({words}, DType::I64));
  group.allgather(all, mine)->wait();
  std::vector<std::string> out;
  if (group.rank() != 0) return out;
  for (int r = 0; r < n; ++r)
    out.emplace_back(static_cast<const char*>(all[r].raw_data()), static_cast<size_t>(sizes[r].item<int64_t>()));
  return out;
}

// Worker 0 drives the example: once with gradients collected on every worker, then
// `repeat` timed runs. Returns the timed runs' median in µs (-1: none); an example's
// error is kept for printing, not thrown.
double drive_example(const ExampleOptions& o, dist_autograd::Mode mode, int workers) {
  // The parameter server's trainers open their own contexts; the others run in one
  // of worker 0's, whose gradients every worker keeps for printing the first time.
  const bool own_contexts = o.name == "parameter-server";
  auto run = [&](bool collect) {
    if (own_contexts) return run_once(o.name, mode, -1);
    dist_autograd::ContextGuard context;
    run_once(o.name, mode, context.id());
    for (int w = 0; collect && w < workers; ++w)
      rpc::rpc_sync(w, "example.collect", {Value(context.id())});
  };
  try {
    run(true);
    for (int w = 0; o.repeat > 0 && w < workers; ++w)
      rpc::rpc_sync(w, "example.stop_graphs");
    std::vector<double> us;
    for (int64_t i = 0; i < o.repeat; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      run(false);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return us.empty() ? -1 : median(us);
  } catch (const Error& e) {
    g_named.error = e.message();
    return -1;
  }
}

// This worker's result as one JSON line (--json).
std::string result_json(int rank, double median_us) {
  Json inputs = Json::object(), gradients = Json::object();
  for (const auto& [name, t] : g_named.inputs)
    inputs[name] = nested(t);
  for (const auto& [name, g] : g_named.gradients)
    gradients[name] = nested(g);
  Json line = {{"worker", rank}, {"inputs", inputs}, {"gradients", gradients}};
  if (!g_named.error.empty()) line["error"] = g_named.error;
  if (median_us >= 0) line["median_us"] = median_us;
  if (!g_losses.empty()) line["losses"] = g_losses;
  return line.dump();
}

void print_result(const ExampleOptions& o, int rank, int workers, double median_us) {
  if (rank == 0) {
    std::printf("example %s on %d workers, %s mode: %s\n", o.name.c_str(), workers, o.mode.c_str(),
                g_named.error.empty() ? "backward done" : "backward failed (the error follows)");
    if (median_us >= 0)
      std::printf("  %s, median of %lld runs: %.1f us\n",
                  o.name == "parameter-server" ? "a step on every trainer at once" : "forward + backward",
                  static_cast<long long>(o.repeat), median_us);
  }
  if (!g_losses.empty()) {
    std::printf("  worker%d: loss %.4f after its first step, %.4f after %zu steps\n", rank, g_losses.front(),
                g_losses.back(), g_losses.size());
  }
  for (const auto& [name, g] : g_named.gradients) {
    std::printf("  worker%d: gradient of %s: %s\n", rank, name.c_str(), g.describe().c_str());
  }
}

// The ring allreduce of engine/c10d/ring_allreduce.h on a small tensor, recorded step by
// step (ring_step spans) for the Learn tab's ring lesson: 2 elements a block, rank r's
// tensor all r + 1, so every element sums to n(n+1)/2. Each rank says what it sent.
int run_ring_example(c10d::ProcessGroup& group, const ExampleOptions& o) {
  const int n = group.size(), rank = group.rank();
  Tensor t = Tensor::full({2 * n}, rank + 1);
  group.allreduce(t)->wait();
  const double want = n * (n + 1) / 2.0;
  const std::vector<float> got = t.to_vector<float>();
  const bool right = std::all_of(got.begin(), got.end(), [&](float v) { return v == want; });
  const int64_t bytes = 2 * n * static_cast<int64_t>(sizeof(float));
  const int64_t sent = 2 * (n - 1) * 2 * static_cast<int64_t>(sizeof(float));
  if (o.json) {
    std::printf("{\"worker\": %d, \"sum\": %s, \"sent_bytes\": %lld, \"tensor_bytes\": %lld}\n", rank,
                nlohmann::json(got).dump().c_str(), static_cast<long long>(sent), static_cast<long long>(bytes));
  } else {
    std::printf("rank %d: every element %s %.0f; sent %lld of the tensor's %lld bytes in %d steps (2(n-1)/n = %.2f)\n",
                rank, right ? "=" : "!=", want, static_cast<long long>(sent), static_cast<long long>(bytes),
                2 * (n - 1), 2.0 * (n - 1) / n);
  }
  std::fflush(stdout);
  DDPSCOPE_CHECK(right, "example ring: rank ", rank, " summed to ", nlohmann::json(got).dump(), ", not ", want);
  return 0;
}

}  // namespace

const std::vector<std::string>& example_names() {
  static const std::vector<std::string> names = {"seed", "chain", "rref", "unused-rpc", "parameter-server", "ring"};
  return names;
}

std::vector<std::string> example_arguments(const ExampleOptions& o) {
  std::vector<std::string> a = {"example", o.name, "--seed",   std::to_string(o.seed),
                                "--mode",  o.mode, "--repeat", std::to_string(o.repeat)};
  if (o.json) a.push_back("--json");
  return a;
}

int example_worker(int argc, char** argv) {
  CLI::App app{"ddpscope-worker example: one rank of a distributed autograd example"};
  ExampleOptions o;
  app.add_option("NAME", o.name)->required()->check(CLI::IsMember(example_names()));
  app.add_option("--seed", o.seed);
  app.add_option("--mode", o.mode)->check(CLI::IsMember({"fast", "smart"}));
  app.add_option("--repeat", o.repeat)->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  app.add_flag("--json", o.json);
  CLI11_PARSE(app, argc, argv);
  g_seed = o.seed;
  // The ring example sums around ring_allreduce.h's ring, whatever the hosts.
  if (o.name == "ring") setenv("DDPSCOPE_MPI_RING", "1", 1);
  auto group = c10d::init_process_group();
  auto probes_session = probes::ProbeSession::from_environment(group->rank(), "cpu");
  probes::set_thread_name("example " + o.name);
  if (o.name == "ring") {
    emit_group_up(group->rank(), group->size(), "example ring");
    const int code = run_ring_example(*group, o);
    if (probes_session) probes_session->flush();
    emit_rank_end(group->rank(), probes_session ? probes_session->shipped() : 0,
                  probes_session ? probes_session->dropped() : 0);
    return code;
  }
  const int rank = group->rank();
  const int need = o.name == "seed" || o.name == "unused-rpc" || o.name == "parameter-server" ? 2 : 3;
  DDPSCOPE_CHECK(group->size() >= need, "example ", o.name, " needs at least ", need, " workers (--np ", need,
                 "); this job has ", group->size());
  register_example_functions();
  rpc::init_rpc("", {}, group);
  emit_group_up(rank, group->size(), "example " + o.name);
  const auto mode = o.mode == "smart" ? dist_autograd::Mode::Smart : dist_autograd::Mode::Fast;
  const double median_us = rank == 0 ? drive_example(o, mode, group->size()) : -1;
  const bool failed = rank == 0 && !g_named.error.empty();
  rpc::shutdown(true);
  std::string json_line;
  {
    std::lock_guard<std::mutex> lock(g_named.mutex);
    if (o.json)
      json_line = result_json(rank, median_us);
    else
      print_result(o, rank, group->size(), median_us);
    std::fflush(stdout);
  }
  if (o.json) {
    for (const auto& l : gather_on_first(*group, json_line))
      std::printf("%s\n", l.c_str());
    std::fflush(stdout);
  }
  if (probes_session) probes_session->flush();
  // Before MPI's shutdown, which waits for every worker: a worker that never gets there
  // (stopped) is then named by the launcher's end watchdog.
  emit_rank_end(rank, probes_session ? probes_session->shipped() : 0, probes_session ? probes_session->dropped() : 0);
  // A failed example fails the job, naming the rank and the error (the launcher says so).
  if (failed) throw Error(g_named.error, "example", 0);
  return 0;
}

}  // namespace ddpscope::apps
