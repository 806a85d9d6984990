// One SGD training step of an 8 x Linear(1024) ReLU MLP, batch 64, MSE, one thread:
// the engine side of the comparison with PyTorch (mlp_step_torch.py). Prints one JSON
// object; run_mlp_step.py runs both and prints the ratio.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "autograd/ops.h"
#include "nn/models.h"
#include "optim/optimizer.h"
#include "tensor/blas_kernels.h"
#include "tensor/random.h"
#include "tensor/threads.h"

int main(int argc, char** argv) {
  using namespace ddpscope;
  reexec_with_preferred_blas_core(argv);
  int64_t width = 1024, depth = 8, batch = 64, steps = 30, warmup = 5;
  int threads = 1;
  CLI::App app{"MLP training-step benchmark (ddpscope side)"};
  app.add_option("--width", width);
  app.add_option("--depth", depth);
  app.add_option("--batch", batch);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads);
  CLI11_PARSE(app, argc, argv);

  set_num_threads(threads);
  Generator gen(0);
  // Same architecture as torch.nn.Sequential(Linear, ReLU, ..., Linear): no final ReLU.
  nn::Mlp model({.in_features = width, .width = width, .depth = depth, .out_features = width}, &gen);
  optim::SGD opt(model.parameters(), {.lr = 1e-3});
  const Tensor x = randn({batch, width}, DType::F32, &gen);
  const Tensor y = randn({batch, width}, DType::F32, &gen);

  std::vector<double> times;
  double loss_value = 0;
  Storage::reset_cpu_peak();
  for (int64_t step = 0; step < warmup + steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    opt.zero_grad(true);
    const Tensor loss = mse_loss(model.forward(x), y);
    loss.backward();
    opt.step();
    const auto t1 = std::chrono::steady_clock::now();
    loss_value = loss.item<double>();
    if (step >= warmup) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(times.begin(), times.end());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  nlohmann::json out = {
      {"impl", "ddpscope"},
      {"median_ms", times[times.size() / 2]},
      {"min_ms", times.front()},
      {"peak_rss_mb", static_cast<double>(usage.ru_maxrss) / 1024.0},
      {"peak_tensor_mb", static_cast<double>(Storage::cpu_peak_bytes()) / (1024.0 * 1024.0)},
      {"final_loss", loss_value},
      {"openblas_core", openblas_core()},
  };
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
