// ProcessGroupNCCL against raw ncclAllReduce, measured in the same job, size by size
// (4 KiB to 256 MiB of f32), interleaved round by round so noise hits both. The raw side
// is the floor for any wrapper: one ncclAllReduce per call on its own communicator and
// stream, a stream synchronise at the end. Ours issues every call at once and waits for
// the last (as DDP issues its buckets), so what it adds is its per-op work: the event
// that orders the op after its producer, the completion event, the Work and the
// completion thread. Run under mpirun (one rank per GPU; world size 1 measures the
// per-op overhead alone):
//   mpirun -np 1 build/tests/bench/bench_nccl_allreduce
// Rank 0 prints one JSON object: per size the time per op of each and raw/ours.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "c10d/mpi_environment.h"
#include "c10d/process_group.h"
#include "tensor/cuda_runtime_facade.h"

using namespace ddpscope;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int die(const char* what, const char* why) {
  std::fprintf(stderr, "bench_nccl_allreduce: %s failed: %s\n", what, why);
  return 1;
}

}  // namespace

int main() {
  if (!cuda::available()) {
    std::printf("SKIP: no usable CUDA device\n");
    return 77;
  }
  auto pg = c10d::init_process_group({.backend = "nccl"});
  const int rank = pg->rank(), n = pg->size();
  const Device gpu = pg->tensor_device();
  // The raw side's own communicator and stream, on the group's GPU.
  ncclUniqueId id;
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return die("ncclGetUniqueId", "");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t raw = nullptr;
  if (ncclResult_t r = ncclCommInitRank(&raw, n, id, rank); r != ncclSuccess)
    return die("ncclCommInitRank", ncclGetErrorString(r));
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);

  nlohmann::json sizes = nlohmann::json::array();
  for (int64_t bytes = 4 << 10; bytes <= (256 << 20); bytes *= 4) {
    const int64_t numel = bytes / 4;
    Tensor t = Tensor::ones({numel}, DType::F32, gpu);
    const int iters = static_cast<int>(std::clamp<int64_t>((2LL << 30) / bytes, 20, 2000));
    std::vector<double> raw_s, ours_s, ratios;
    for (int rep = 0; rep < 9; ++rep) {
      cudaDeviceSynchronize();
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i)
        ncclAllReduce(t.raw_data(), t.raw_data(), numel, ncclFloat, ncclSum, raw, stream);
      cudaStreamSynchronize(stream);
      raw_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / iters);
      cudaDeviceSynchronize();
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = Clock::now();
      std::vector<std::shared_ptr<c10d::Work>> works;
      works.reserve(iters);
      for (int i = 0; i < iters; ++i)
        works.push_back(pg->allreduce(t));
      works.back()->wait();
      ours_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / iters);
      ratios.push_back(raw_s.back() / ours_s.back());
    }
    const double raw_us = median(raw_s) * 1e6, ours_us = median(ours_s) * 1e6;
    // Bus bandwidth as nccl-tests defines it for allreduce: bytes * 2(n-1)/n per time.
    const double bus = n > 1 ? 2.0 * (n - 1) / n : 1.0;
    sizes.push_back({{"bytes", bytes},
                     {"iters", iters},
                     {"raw_us_per_op", raw_us},
                     {"ours_us_per_op", ours_us},
                     {"raw_busbw_GBps", bytes * bus / (raw_us * 1e3)},
                     {"ours_busbw_GBps", bytes * bus / (ours_us * 1e3)},
                     {"raw_over_ours", median(ratios)}});
  }
  if (rank == 0) {
    nlohmann::json out = {{"benchmark", "nccl_allreduce"}, {"world_size", n}, {"sizes", sizes}};
    std::printf("%s\n", out.dump(2).c_str());
  }
  ncclCommDestroy(raw);
  cudaStreamDestroy(stream);
  pg.reset();
  return 0;
}
