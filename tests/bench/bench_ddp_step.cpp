// DDP training step of an 8 x Linear(1024) ReLU MLP, batch 64 per rank, MSE, SGD, one
// compute thread per rank: ddpscope's side of the comparison with PyTorch DDP on gloo
// (ddp_step_torch.py; run_ddp_step.py runs both). Run under mpirun with 2 ranks. Modes:
// DDP with bucket caps 1, 5, 25 and 100 MiB, and the no-overlap baseline (one
// allreduce of all gradients after backward). Rank 0 prints one JSON object.
//
//   bench_ddp_step [steps] [--ddp-only]
// --ddp-only runs DDP at 25 MiB alone (run_probe_overhead.py). With the collector's
// address in the environment the ranks record probes and ship them, as a launched job
// does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "c10d/process_group.h"
#include "ddp/distributed_data_parallel.h"
#include "nn/models.h"
#include "optim/optimizer.h"
#include "probe.h"
#include "probe_session.h"
#include "tensor/blas_kernels.h"
#include "tensor/random.h"
#include "tensor/threads.h"

using namespace ddpscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Result {
  double median_ms, min_ms;
  double overlap_ratio = 0;  // DDP only: mean over measured steps
  double comm_ms = 0;
  size_t gradients_copied = 0;  // DDP only, last step: the rest were computed in their bucket
};

// `overlap` false: plain model, all gradients averaged in one allreduce after backward.
Result run(const std::shared_ptr<c10d::ProcessGroup>& pg, bool overlap, double cap_mb, int steps, int warmup) {
  Generator gen(0);
  auto mlp = std::make_shared<nn::Mlp>(
      nn::MlpConfig{.in_features = 1024, .width = 1024, .depth = 8, .out_features = 1024}, &gen);
  std::shared_ptr<nn::Module> model = mlp;
  if (overlap)
    model = std::make_shared<ddp::DistributedDataParallel>(mlp, pg, ddp::DdpOptions{.bucket_cap_mb = cap_mb});
  optim::SGD opt(model->parameters(), {.lr = 1e-3});
  Generator data(1 + pg->rank());
  const Tensor x = randn({64, 1024}, DType::F32, &data), y = randn({64, 1024}, DType::F32, &data);
  std::vector<double> times;
  double overlap_sum = 0, comm_sum = 0;
  size_t copied = 0;
  for (int step = 0; step < warmup + steps; ++step) {
    pg->barrier()->wait();
    const auto t0 = Clock::now();
    probes::set_iteration(step + 1);
    DDPSCOPE_SPAN(iteration, probes::Kind::Iteration, "iteration");
    opt.zero_grad(true);
    DDPSCOPE_SPAN(forward, probes::Kind::Forward, "forward");
    const Tensor loss = mse_loss(model->forward(x), y);
    forward.end();
    {
      DDPSCOPE_SPAN(backward, probes::Kind::Backward, "backward");
      loss.backward();
    }
    if (!overlap) {
      std::vector<Tensor> grads;
      for (auto& p : model->parameters())
        grads.push_back(p.grad());
      pg->allreduce_coalesced(grads, {.op = c10d::ReduceOp::Avg})->wait();
    }
    {
      DDPSCOPE_SPAN(optimizer, probes::Kind::Optimizer, "optimizer");
      opt.step();
    }
    iteration.end();
    if (step >= warmup) {
      times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (auto* d = dynamic_cast<ddp::DistributedDataParallel*>(model.get())) {
        overlap_sum += d->last_iteration().overlap_ratio();
        comm_sum += d->last_iteration().backward_comm_ms;
        copied = d->last_iteration().gradients_copied;
      }
    }
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front(), overlap_sum / steps, comm_sum / steps, copied};
}

}  // namespace

int main(int argc, char** argv) {
  reexec_with_preferred_blas_core(argv);
  set_num_threads(1);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 30;
  const bool ddp_only = argc > 2 && std::string(argv[2]) == "--ddp-only";
  auto pg = c10d::init_process_group({.backend = "mpi"});
  auto session = probes::ProbeSession::from_environment(pg->rank());
  probes::set_thread_name("compute");
  nlohmann::json modes = nlohmann::json::array();
  for (double cap : ddp_only ? std::vector<double>{25.0} : std::vector<double>{25.0, 1.0, 5.0, 100.0}) {
    const Result r = run(pg, true, cap, steps, 5);
    modes.push_back({{"mode", "ddp"},
                     {"bucket_cap_mb", cap},
                     {"median_ms", r.median_ms},
                     {"min_ms", r.min_ms},
                     {"overlap_ratio", r.overlap_ratio},
                     {"comm_ms", r.comm_ms},
                     {"gradients_copied", r.gradients_copied}});
  }
  if (!ddp_only) {
    const Result base = run(pg, false, 0, steps, 5);
    modes.push_back({{"mode", "no_overlap"}, {"median_ms", base.median_ms}, {"min_ms", base.min_ms}});
  }
  uint64_t shipped = 0, dropped = 0;
  if (session) {
    session->flush();
    shipped = session->shipped();
    dropped = session->dropped();
  }
  if (pg->rank() == 0) {
    std::printf("%s\n", nlohmann::json({{"impl", "ddpscope"},
                                        {"ranks", pg->size()},
                                        {"openblas_core", openblas_core()},
                                        {"probes_compiled_in", probes::kCompiledIn},
                                        {"events_shipped", shipped},
                                        {"events_dropped", dropped},
                                        {"modes", modes}})
                            .dump()
                            .c_str());
  }
  return 0;
}
