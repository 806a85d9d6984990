// A DDP-like run for the GUI benchmarks, written through the real run store: per rank
// and iteration, on the compute thread an iteration span with forward, backward (160
// autograd nodes inside it, a gradient-ready tick every other one) and optimizer; on the
// comm thread 8 bucket allreduces with the MPI op under each. 10 ms iterations. The
// innermost spans' ends move by up to 4 us, as a real clock's do (a run of perfectly
// regular times packs to under a byte a span, which the run store refuses as a bomb).
#pragma once

#include <vector>

#include "run_store_writer.h"

namespace ddpscope::bench {

inline constexpr int kSpansPerRankIteration = 4 + 160 + 80 + 2 * 8;

// Writes iterations [from, to] of `rank` in batches of about 20000 events.
inline int64_t write_iterations(probes::RunStoreWriter& w, int rank, int from, int to) {
  using namespace probes;
  EventBatch b;
  b.rank = rank;
  b.threads = {{0, 1, "compute"}, {1, 2, "comm"}};
  b.names = {"iteration",      "forward",    "backward",  "optimizer",
             "LinearBackward", "grad_ready", "allreduce", "allreduce_mpi"};
  int64_t written = 0;
  uint64_t state = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(rank + 1) + static_cast<uint64_t>(from);
  auto jitter = [&]() -> int64_t {  // xorshift64: the same run every time
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<int64_t>(state & 4095);
  };
  auto ev = [&](Kind kind, uint32_t name, int64_t t0, int64_t t1, int it, int16_t bucket, uint16_t thread) {
    b.events.push_back(BatchEvent{t0, t1, bucket >= 0 ? 1 << 20 : -1, -1, -1, it, -1, name, bucket, -1, thread,
                                  static_cast<uint8_t>(kind), 0});
  };
  for (int it = from; it <= to; ++it) {
    const int64_t o = int64_t{it} * 10'000'000 + rank * 20'000;
    ev(Kind::Iteration, 0, o, o + 9'500'000, it, -1, 0);
    ev(Kind::Forward, 1, o, o + 3'000'000, it, -1, 0);
    ev(Kind::Backward, 2, o + 3'000'000, o + 8'000'000, it, -1, 0);
    for (int n = 0; n < 160; ++n) {
      const int64_t t = o + 3'000'000 + n * 31'000;
      const int64_t end = t + 30'000 - jitter();
      ev(Kind::AutogradNode, 4, t + jitter(), end, it, -1, 0);
      if (n % 2 == 0) ev(Kind::GradReady, 5, end - 1'000, end - 1'000, it, -1, 0);
    }
    ev(Kind::Optimizer, 3, o + 8'000'000, o + 9'000'000, it, -1, 0);
    for (int k = 0; k < 8; ++k) {
      const int64_t t = o + 3'500'000 + k * 600'000;
      ev(Kind::Allreduce, 6, t, t + 550'000, it, static_cast<int16_t>(k), 1);
      ev(Kind::PgOp, 7, t + 10'000 + jitter(), t + 540'000 - jitter(), it, -1, 1);
    }
    if (b.events.size() >= 20000 || it == to) {
      written += static_cast<int64_t>(b.events.size());
      w.write(b);
      b.events.clear();
    }
  }
  return written;
}

}  // namespace ddpscope::bench
