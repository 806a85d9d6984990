// A synthetic DDP run whose cause is known exactly, for the cause analysis (slow_cause.h):
// every rank runs, each iteration, 1 ms outside the step, 3 ms of forward, a backward whose
// four gradients (params 3, 2, 1, 0: the MLP's layers in reverse) each take 1 ms, two bucket
// allreduces (params 3 and 2, then 1 and 0) that end 0.5 ms after their last rank arrives,
// and a 1 ms optimizer step after them. One rank can be slower by `slow_ms` in one phase
// (backward: in one layer's gradient), stall once, or have an iteration cut short by an error.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "known_iterations_run.h"
#include "run_store_writer.h"

namespace ddpscope::testing {

struct SlowRunSpec {
  int ranks = 2;
  int iterations = 12;
  int slow_rank = -1;
  std::string phase;  // outside_step, forward, backward, optimizer
  int layer = 0;      // backward: the param (0..3) whose gradient is slow
  double slow_ms = 0;
  int stall_rank = -1, stall_iteration = -1;  // that rank stays `stall_ms` outside the step once
  double stall_ms = 0;
  int cut_iteration = -1;  // rank 0's span of that iteration ends by an error
};

namespace slow_run_detail {

constexpr int64_t kMsNs = 1'000'000;
constexpr int kParams = 4;

inline int64_t extra(const SlowRunSpec& s, int rank, const char* phase, int param = -1) {
  if (rank != s.slow_rank || s.phase != phase || (param >= 0 && param != s.layer)) return 0;
  return static_cast<int64_t>(s.slow_ms * kMsNs);
}

inline probes::BatchEvent collective(int64_t b, int64_t e, int32_t iteration, int64_t seq) {
  probes::BatchEvent ev = known_span(probes::Kind::PgOp, 4, b, e, iteration, 1);
  ev.id = seq;
  return ev;
}

inline std::string buckets_record() {
  std::string params;
  for (int p = 0; p < kParams; ++p)
    params += (p ? "," : "") + std::string("{\"index\":") + std::to_string(p) + ",\"name\":\"module.layers." +
              std::to_string(2 * p) +
              ".weight\",\"shape\":[4],\"dtype\":\"float32\",\"bucket\":" + std::to_string(p >= 2 ? 0 : 1) + "}";
  return "{\"type\":\"buckets\",\"generation\":0,\"buckets\":[{\"bucket\":0,\"bytes\":32,\"params\":[2,3]},"
         "{\"bucket\":1,\"bytes\":32,\"params\":[0,1]}],\"params\":[" +
         params + "]}";
}

}  // namespace slow_run_detail

inline void write_slow_run(const std::string& path, const SlowRunSpec& spec) {
  using namespace slow_run_detail;
  using probes::Kind;
  const auto n = static_cast<size_t>(spec.ranks);
  std::vector<probes::EventBatch> batches(n);
  for (size_t r = 0; r < n; ++r) {
    batches[r].rank = static_cast<int>(r);
    batches[r].threads = {{0, 1, "main"}, {1, 2, "comm"}};
    batches[r].names = {"iteration", "forward", "backward", "optimizer", "allreduce", "grad_ready"};
    batches[r].records = {buckets_record()};
  }
  int64_t sync = 10 * kMsNs;          // every rank leaves the last allreduce here
  std::vector<int64_t> after_opt(n);  // each rank's end of the previous optimizer step
  for (int it = 1; it <= spec.iterations; ++it) {
    std::vector<int64_t> begin(n), arrive0(n), arrive1(n), backward(n);
    for (size_t r = 0; r < n; ++r) {
      const int rank = static_cast<int>(r);
      const int64_t outside =
          kMsNs + extra(spec, rank, "outside_step") +
          (rank == spec.stall_rank && it == spec.stall_iteration ? static_cast<int64_t>(spec.stall_ms * kMsNs) : 0);
      begin[r] = (it == 1 ? sync : after_opt[r]) + outside;
      backward[r] = begin[r] + 3 * kMsNs + extra(spec, rank, "forward");
      batches[r].events.push_back(known_span(Kind::Forward, 1, begin[r], backward[r], it));
      int64_t t = backward[r];
      for (int p = kParams - 1; p >= 0; --p) {
        t += kMsNs + extra(spec, rank, "backward", p);
        probes::BatchEvent ready = known_span(Kind::GradReady, 5, t, t, it);
        ready.param = p;
        batches[r].events.push_back(ready);
        (p == 2 ? arrive0[r] : arrive1[r]) = t;
      }
    }
    const int64_t end0 = *std::max_element(arrive0.begin(), arrive0.end()) + kMsNs / 2;
    const int64_t end1 = std::max(*std::max_element(arrive1.begin(), arrive1.end()), end0) + kMsNs / 2;
    for (size_t r = 0; r < n; ++r) {
      auto& ev = batches[r].events;
      ev.push_back(collective(arrive0[r], end0, it, 2 * it));
      ev.push_back(collective(arrive1[r], end1, it, 2 * it + 1));
      ev.push_back(known_span(Kind::Backward, 2, backward[r], end1, it));  // finalize waits for the buckets
      after_opt[r] = end1 + kMsNs + extra(spec, static_cast<int>(r), "optimizer");
      ev.push_back(known_span(Kind::Optimizer, 3, end1, after_opt[r], it));
      probes::BatchEvent iteration = known_span(Kind::Iteration, 0, begin[r], after_opt[r], it);
      if (r == 0 && it == spec.cut_iteration) iteration.flags = probes::kEndedByError;
      ev.push_back(iteration);
    }
    sync = end1;
  }
  probes::RunStoreWriter w(path);
  w.begin_run({.world_size = spec.ranks});
  for (const probes::EventBatch& b : batches)
    w.write(b);
  w.end_run("finished");
}

}  // namespace ddpscope::testing
