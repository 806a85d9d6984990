// ZeRO and SyncBatchNorm: ddpscope's side of the comparison with PyTorch 1.13 on gloo
// (zero_torch.py; run_zero.py runs both). An 8 x Linear(1024) ReLU MLP, batch 64 per
// rank, MSE, AdamW, one compute thread per rank, DDP with PyTorch's default buckets
// (25 MiB, first 1 MiB). Modes:
//   ddp           plain DDP, every rank holding the whole AdamW state;
//   zero          ZeroRedundancyOptimizer: each rank steps its shard, then broadcasts;
//   zero_overlap  the shard stepped in DDP's bucket hook during backward;
//   batch_norm    the MLP with a BatchNorm1d after each hidden Linear (local statistics);
//   sync_bn       the same with SyncBatchNorm (statistics over both ranks).
// Per mode: median and min iteration time, the median time of the optimizer call after
// backward (ZeRO: its broadcasts, and the shard's step when not overlapped) and the
// optimizer-state bytes a rank holds (the largest over the ranks). Run under mpirun with 2 ranks; rank 0 prints one
// JSON object.
//
//   bench_zero [steps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "c10d/process_group.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp/sync_batch_norm.h"
#include "ddp/zero_redundancy_optimizer.h"
#include "nn/models.h"
#include "optim/optimizer.h"
#include "tensor/blas_kernels.h"
#include "tensor/random.h"
#include "tensor/threads.h"

using namespace ddpscope;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kWidth = 1024;

struct Result {
  double median_ms = 0, min_ms = 0;
  double step_ms = 0;       // median time of the optimizer call after backward
  int64_t state_bytes = 0;  // the largest over the ranks
};

std::unique_ptr<optim::Optimizer> adamw(std::vector<Tensor> params) {
  return std::make_unique<optim::AdamW>(std::move(params), optim::AdamOptions{.lr = 1e-4, .weight_decay = 0.01});
}

Result run(const std::shared_ptr<c10d::ProcessGroup>& pg, const std::string& mode, int steps, int warmup) {
  Generator gen(0);
  const bool norms = mode == "batch_norm" || mode == "sync_bn";
  std::shared_ptr<nn::Module> mlp = std::make_shared<nn::Mlp>(
      nn::MlpConfig{.in_features = kWidth, .width = kWidth, .depth = 8, .out_features = kWidth, .batch_norm = norms},
      &gen);
  if (mode == "sync_bn") mlp = ddp::convert_sync_batchnorm(mlp, pg);
  auto model = std::make_shared<ddp::DistributedDataParallel>(mlp, pg, ddp::DdpOptions{});
  std::unique_ptr<optim::Optimizer> plain;
  std::unique_ptr<ddp::ZeroRedundancyOptimizer> zero;
  if (mode == "zero" || mode == "zero_overlap") {
    zero = std::make_unique<ddp::ZeroRedundancyOptimizer>(model->parameters(), pg, adamw);
    if (mode == "zero_overlap") zero->overlap_with(*model);
  } else {
    plain = adamw(model->parameters());
  }
  Generator data(1 + pg->rank());
  const Tensor x = randn({64, kWidth}, DType::F32, &data), y = randn({64, kWidth}, DType::F32, &data);
  std::vector<double> times, step_times;
  for (int step = 0; step < warmup + steps; ++step) {
    pg->barrier()->wait();
    const auto t0 = Clock::now();
    if (zero)
      zero->zero_grad(true);
    else
      plain->zero_grad(true);
    mse_loss(model->forward(x), y).backward();
    const auto t1 = Clock::now();
    if (zero)
      zero->step();
    else
      plain->step();
    if (step >= warmup) {
      times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      step_times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t1).count());
    }
  }
  std::sort(times.begin(), times.end());
  std::sort(step_times.begin(), step_times.end());
  Tensor bytes = Tensor::scalar(static_cast<double>(zero ? zero->state_bytes() : plain->state_bytes()), DType::F64);
  pg->allreduce(bytes, {.op = c10d::ReduceOp::Max})->wait();
  return {times[times.size() / 2], times.front(), step_times[step_times.size() / 2],
          static_cast<int64_t>(bytes.item<double>())};
}

}  // namespace

int main(int argc, char** argv) {
  reexec_with_preferred_blas_core(argv);
  set_num_threads(1);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  auto pg = c10d::init_process_group({.backend = "mpi"});
  nlohmann::json modes = nlohmann::json::array();
  for (const std::string mode : {"ddp", "zero", "zero_overlap", "batch_norm", "sync_bn"}) {
    const Result r = run(pg, mode, steps, 5);
    modes.push_back({{"mode", mode},
                     {"median_ms", r.median_ms},
                     {"min_ms", r.min_ms},
                     {"step_ms", r.step_ms},
                     {"state_bytes_per_rank", r.state_bytes}});
  }
  if (pg->rank() == 0) {
    std::printf("%s\n",
                nlohmann::json(
                    {{"impl", "ddpscope"}, {"ranks", pg->size()}, {"openblas_core", openblas_core()}, {"modes", modes}})
                    .dump()
                    .c_str());
  }
  return 0;
}
