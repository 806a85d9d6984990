// Allreduce bus bandwidth of ProcessGroupMPI against a raw MPI_Allreduce loop, measured
// in the same job, size by size (4 KiB to 64 MiB of f32), interleaved so noise hits
// both. Ours is measured two ways:
//  - pipelined: every call issued at once, then a wait for the last, the way nccl-tests
//    measures bus bandwidth and the way DDP issues its buckets (the target applies here);
//  - synchronous: allreduce(t)->wait() per call, which adds the two thread hand-offs
//    of an asynchronous API to each call (its latency is reported alongside).
// Run under mpirun with 2 ranks:
//   mpirun -np 2 build/tests/bench/bench_allreduce
// Rank 0 prints one JSON object: per size the bus bandwidth of each and ours/raw.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "c10d/process_group_mpi.h"

using namespace ddpscope;
using namespace ddpscope::c10d;
using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

int main() {
  auto pg = init_process_group({.backend = "mpi"});
  MPI_Comm raw_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw_comm);
  const int n = pg->size();
  nlohmann::json sizes = nlohmann::json::array();
  for (int64_t bytes = 4 << 10; bytes <= (64 << 20); bytes *= 4) {
    const int64_t numel = bytes / 4;
    Tensor t = Tensor::ones({numel});
    // Enough iterations for ~0.2 s per measurement at 1 GB/s, at least 5.
    const int iters = static_cast<int>(std::clamp<int64_t>((200 << 20) / bytes, 10, 2000));
    std::vector<double> raw_s, ours_s, sync_s;
    // Nine rounds; the ratio is the median of each round's own ratio (both sides measured
    // back to back), which cancels the slow swings of a shared machine.
    std::vector<double> ratios;
    for (int rep = 0; rep < 9; ++rep) {
      MPI_Barrier(raw_comm);
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) {
        MPI_Allreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(numel), MPI_FLOAT, MPI_SUM, raw_comm);
      }
      raw_s.push_back(seconds_since(t0) / iters);
      MPI_Barrier(raw_comm);
      t0 = Clock::now();
      std::vector<std::shared_ptr<Work>> works;
      works.reserve(iters);
      for (int i = 0; i < iters; ++i)
        works.push_back(pg->allreduce(t));
      works.back()->wait();  // ops complete in issue order
      ours_s.push_back(seconds_since(t0) / iters);
      ratios.push_back(raw_s.back() / ours_s.back());
      MPI_Barrier(raw_comm);
      t0 = Clock::now();
      for (int i = 0; i < iters; ++i)
        pg->allreduce(t)->wait();
      sync_s.push_back(seconds_since(t0) / iters);
    }
    std::sort(sync_s.begin(), sync_s.end());
    std::sort(raw_s.begin(), raw_s.end());
    std::sort(ours_s.begin(), ours_s.end());
    std::sort(ratios.begin(), ratios.end());
    const double raw = raw_s[raw_s.size() / 2], ours = ours_s[ours_s.size() / 2];
    const double sync = sync_s[sync_s.size() / 2];
    const double factor = 2.0 * (n - 1) / n;  // bytes each rank moves in a ring allreduce
    sizes.push_back({{"bytes", bytes},
                     {"iters", iters},
                     {"raw_us", raw * 1e6},
                     {"ours_us", ours * 1e6},
                     {"raw_busbw_gbps", factor * bytes / raw / 1e9},
                     {"ours_busbw_gbps", factor * bytes / ours / 1e9},
                     {"ratio_ours_over_raw", ratios[ratios.size() / 2]},
                     {"sync_us", sync * 1e6},
                     {"sync_ratio_ours_over_raw", raw / sync}});
  }
  if (pg->rank() == 0) {
    nlohmann::json out = {{"benchmark", "allreduce_busbw_f32"},
                          {"ranks", n},
                          {"target", "ratio >= 0.95 from 1 MiB up"},
                          {"sizes", sizes}};
    std::printf("%s\n", out.dump(2).c_str());
  }
  MPI_Comm_free(&raw_comm);
  pg.reset();
  return 0;
}
