// A 2-rank run file with iterations of known times, for the comparison's tests (probes
// and the app's Compare page).
#pragma once

#include <string>

#include "run_store_writer.h"

namespace ddpscope::testing {

inline probes::BatchEvent known_span(probes::Kind kind, uint32_t name, int64_t b, int64_t e, int32_t iteration,
                                     uint16_t thread = 0) {
  return probes::BatchEvent{b, e, -1, -1, -1, iteration, -1, name, -1, -1, thread, static_cast<uint8_t>(kind), 0};
}

// Iterations 1..`iterations` on ranks 0 and 1, each 10 ms from 10 ms * its number plus
// `offset_ns` (times in ms below): forward [0, 2], backward [2, 7], an allreduce on the comm thread [7, 8]
// (exposed: past backward), optimizer [8, 8 + optimizer_ms]; a "data_wait" mark
// [8 + optimizer_ms, 9] when `waits`; "gather", another allreduce under backward, [3, 4]
// when `gathers`.
inline void write_known_iterations(const std::string& path, double optimizer_ms, bool gathers, bool waits,
                                   int iterations = 4, int64_t offset_ns = 0) {
  using probes::Kind;
  probes::RunStoreWriter w(path);
  w.begin_run({.world_size = 2});
  for (int rank = 0; rank < 2; ++rank) {
    probes::EventBatch b;
    b.rank = rank;
    b.threads = {{0, 1, "compute"}, {1, 2, "comm"}};
    b.names = {"iteration", "forward", "backward", "allreduce", "optimizer", "gather", "data_wait"};
    for (int it = 1; it <= iterations; ++it) {
      const int64_t o = int64_t{it} * 10'000'000 + offset_ns;
      const auto at = [&](double ms) { return o + static_cast<int64_t>(ms * 1e6); };
      b.events.push_back(known_span(Kind::Iteration, 0, at(0), at(10), it));
      b.events.push_back(known_span(Kind::Forward, 1, at(0), at(2), it));
      b.events.push_back(known_span(Kind::Backward, 2, at(2), at(7), it));
      b.events.push_back(known_span(Kind::Optimizer, 4, at(8), at(8 + optimizer_ms), it));
      if (waits) b.events.push_back(known_span(Kind::Mark, 6, at(8 + optimizer_ms), at(9), it));
      b.events.push_back(known_span(Kind::Allreduce, 3, at(7), at(8), it, 1));
      if (gathers) b.events.push_back(known_span(Kind::Allreduce, 5, at(3), at(4), it, 1));
    }
    w.write(b);
  }
  w.end_run("finished");
}

}  // namespace ddpscope::testing

namespace ddpscope::testing {

// A wide job for the Ranks overview: `ranks` ranks on hosts of `ranks_per_host` each
// ("node-0", ...), `iterations` iterations of 10 ms (forward 3, backward 5 with an
// allreduce on the comm thread over its last 3 and 1 ms past it, optimizer 1). Rank
// `slow_rank`'s backward takes 4 ms more in every iteration after the first (a straggler).
inline void write_many_ranks(const std::string& path, int ranks, int iterations, int slow_rank, int ranks_per_host,
                             int64_t slowdown_ns = 4'000'000) {
  using probes::Kind;
  probes::RunStoreWriter w(path);
  w.begin_run({.world_size = ranks});
  for (int rank = 0; rank < ranks; ++rank) {
    probes::EventBatch b;
    b.rank = rank;
    b.threads = {{0, 1, "compute"}, {1, 2, "comm"}};
    b.names = {"iteration", "forward", "backward", "allreduce", "optimizer"};
    b.records = {"{\"type\":\"rank\",\"host\":\"node-" + std::to_string(rank / ranks_per_host) +
                 "\",\"pid\":" + std::to_string(1000 + rank) + "}"};
    for (int it = 1; it <= iterations; ++it) {
      const int64_t o = int64_t{it} * 20'000'000;
      const int64_t slow = rank == slow_rank && it > 1 ? slowdown_ns : 0;
      const int64_t end_bw = o + 8'000'000 + slow;
      b.events.push_back(known_span(Kind::Iteration, 0, o, end_bw + 2'000'000, it));
      b.events.push_back(known_span(Kind::Forward, 1, o, o + 3'000'000, it));
      b.events.push_back(known_span(Kind::Backward, 2, o + 3'000'000, end_bw, it));
      b.events.push_back(known_span(Kind::Optimizer, 4, end_bw + 1'000'000, end_bw + 2'000'000, it));
      b.events.push_back(known_span(Kind::Allreduce, 3, end_bw - 3'000'000, end_bw + 1'000'000, it, 1));
    }
    w.write(b);
  }
  w.end_run("finished");
}

}  // namespace ddpscope::testing
