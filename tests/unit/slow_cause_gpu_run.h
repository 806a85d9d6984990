// A synthetic imported GPU trace whose cause is known exactly, for the cause analysis on the
// GPU (slow_cause_gpu.h): each rank's CPU launches, inside its forward, backward, collective
// and optimizer spans, a forward kernel (3 ms), a backward kernel (4 ms), an NCCL allreduce
// kernel and an optimizer kernel (1 ms), tied to their launches by correlation ids as Kineto
// records them. The NCCL kernel starts when the rank's backward kernel ends and ends 0.5 ms
// after the last rank's started. One rank's kernel of one phase can be slower by `slow_ms`.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "known_iterations_run.h"
#include "run_store_writer.h"

namespace ddpscope::testing {

struct SlowGpuRunSpec {
  int ranks = 2;
  int iterations = 4;
  int slow_rank = -1;
  std::string phase;  // forward, backward, optimizer
  double slow_ms = 0;
};

inline void write_slow_gpu_run(const std::string& path, const SlowGpuRunSpec& spec) {
  using probes::Kind;
  constexpr int64_t kMs = 1'000'000;
  const auto n = static_cast<size_t>(spec.ranks);
  const auto slow = [&](size_t r, const char* phase) {
    return static_cast<int>(r) == spec.slow_rank && spec.phase == phase ? static_cast<int64_t>(spec.slow_ms * kMs) : 0;
  };
  std::vector<probes::EventBatch> batches(n);
  for (size_t r = 0; r < n; ++r) {
    batches[r].rank = static_cast<int>(r);
    batches[r].threads = {{0, 1, "python"}, {7, 2, "stream 7"}, {13, 3, "stream 13"}};
    batches[r].names = {"iteration", "forward",          "backward", "optimizer",
                        "allreduce", "cudaLaunchKernel", "gemm",     "ncclKernel_AllReduce"};
  }
  std::vector<int64_t> start(n, 10 * kMs);  // where each rank's GPU starts the iteration's forward kernel
  int64_t correlation = 1;
  for (int it = 1; it <= spec.iterations; ++it) {
    std::vector<int64_t> arrive(n);
    for (size_t r = 0; r < n; ++r)
      arrive[r] = start[r] + 7 * kMs + slow(r, "forward") + slow(r, "backward");
    const int64_t nccl_end = *std::max_element(arrive.begin(), arrive.end()) + kMs / 2;
    for (size_t r = 0; r < n; ++r) {
      auto& ev = batches[r].events;
      const int64_t g = start[r];
      const auto launch = [&](int64_t at, uint32_t kernel_name, Kind kernel_kind, int64_t kb, int64_t ke,
                              uint16_t stream) {
        probes::BatchEvent l = known_span(Kind::CudaRuntime, 5, at, at + 10'000, it, 0);
        l.id2 = correlation;  // stored as msg_id
        probes::BatchEvent k = known_span(kernel_kind, kernel_name, kb, ke, it, stream);
        k.id2 = correlation++;
        ev.push_back(l);
        ev.push_back(k);
      };
      // The CPU launches the iteration's work ahead of the GPU, each kernel inside its phase.
      ev.push_back(known_span(Kind::Iteration, 0, g - kMs, g + kMs / 2, it));
      ev.push_back(known_span(Kind::Forward, 1, g - kMs, g - kMs / 2, it));
      launch(g - 9 * kMs / 10, 6, Kind::GpuKernel, g, g + 3 * kMs + slow(r, "forward"), 7);
      ev.push_back(known_span(Kind::Backward, 2, g - kMs / 2, g - kMs / 5, it));
      launch(g - 4 * kMs / 10, 6, Kind::GpuKernel, g + 3 * kMs + slow(r, "forward"), arrive[r], 7);
      probes::BatchEvent allreduce = known_span(Kind::PgOp, 4, g - kMs / 5, g - kMs / 10, it);
      allreduce.id = it;  // its sequence number
      ev.push_back(allreduce);
      launch(g - 3 * kMs / 20, 7, Kind::GpuComm, arrive[r], nccl_end, 13);
      ev.push_back(known_span(Kind::Optimizer, 3, g, g + kMs / 2, it));
      const int64_t optimized = nccl_end + kMs + slow(r, "optimizer");
      launch(g + kMs / 10, 6, Kind::GpuKernel, nccl_end, optimized, 7);
      start[r] = optimized;  // its next forward kernel follows its optimizer's
    }
  }
  probes::RunStoreWriter w(path);
  w.begin_run({.config_json = R"({"source":"torch-trace"})", .world_size = spec.ranks, .backend = "nccl"});
  for (const probes::EventBatch& b : batches)
    w.write(b);
  w.end_run("finished");
}

}  // namespace ddpscope::testing
