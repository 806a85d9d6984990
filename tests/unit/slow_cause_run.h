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
  int also_slow_rank = -1;  // slowed as slow_rank is
  std::string phase;        // outside_step, forward, backward, optimizer
  int layer = 0;            // backward: the param (0..3) whose gradient is slow
  double slow_ms = 0;
  std::string also_phase;  // the slow rank is slower in this phase too, by also_ms
  double also_ms = 0;
  int slow_from = 1;                          // the first iteration it is slow in
  int slow_until = 1 << 30;                   // the last
  int stall_rank = -1, stall_iteration = -1;  // that rank stays `stall_ms` outside the step once
  double stall_ms = 0;
  int cut_iteration = -1;  // rank 0's span of that iteration ends by an error
  bool running = false;    // the run left "running", as a job still writing it
  int world_size = 0;      // the run's, when it is more than the ranks written (0: ranks)
  std::string host;        // every rank on this host, computing on its CPU (empty: ranks say neither)
  // Up to this much more on every phase and gradient (0: exact times). A run of a thousand
  // ranks with the same times everywhere packs into under 2 bytes a span, which the reader
  // refuses as a bomb; real runs never look like that.
  int64_t jitter_ns = 0;
  // >= 0: every rank records its wait for a CPU in each phase (the engine's
  // "cpu_wait_ms.<phase>" metrics), the slow rank this share of its slowdown, the others none.
  double cpu_wait_share = -1;
  double cpu_wait_each_ms = 0;  // ... and every rank this much outside the step, every iteration
};

namespace slow_run_detail {

constexpr int64_t kMsNs = 1'000'000;
constexpr int kParams = 4;

inline int64_t extra(const SlowRunSpec& s, int rank, int iteration, const char* phase, int param = -1) {
  if ((rank != s.slow_rank && rank != s.also_slow_rank) || (param >= 0 && param != s.layer) ||
      iteration < s.slow_from || iteration > s.slow_until)
    return 0;
  return static_cast<int64_t>(((s.phase == phase ? s.slow_ms : 0) + (s.also_phase == phase ? s.also_ms : 0)) * kMsNs);
}

// A deterministic draw in [0, spec.jitter_ns) for one (rank, iteration, part).
inline int64_t jitter(const SlowRunSpec& s, int rank, int iteration, int part) {
  if (s.jitter_ns <= 0) return 0;
  uint64_t x = (static_cast<uint64_t>(rank) * 1'000'003u + static_cast<uint64_t>(iteration)) * 7919u +
               static_cast<uint64_t>(part) * 104'729u + 0x9e3779b97f4a7c15u;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdu;
  x ^= x >> 33;
  return static_cast<int64_t>(x % static_cast<uint64_t>(s.jitter_ns));
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
    if (!spec.host.empty())
      batches[r].records.push_back("{\"type\":\"rank\",\"host\":\"" + spec.host + "\",\"device\":\"cpu\"}");
  }
  int64_t sync = 10 * kMsNs;          // every rank leaves the last allreduce here
  std::vector<int64_t> after_opt(n);  // each rank's end of the previous optimizer step
  for (int it = 1; it <= spec.iterations; ++it) {
    std::vector<int64_t> begin(n), arrive0(n), arrive1(n), backward(n);
    for (size_t r = 0; r < n; ++r) {
      const int rank = static_cast<int>(r);
      const int64_t outside =
          kMsNs + extra(spec, rank, it, "outside_step") +
          (rank == spec.stall_rank && it == spec.stall_iteration ? static_cast<int64_t>(spec.stall_ms * kMsNs) : 0);
      begin[r] = (it == 1 ? sync : after_opt[r]) + outside;
      backward[r] = begin[r] + 3 * kMsNs + extra(spec, rank, it, "forward") + jitter(spec, rank, it, 1);
      batches[r].events.push_back(known_span(Kind::Forward, 1, begin[r], backward[r], it));
      int64_t t = backward[r];
      for (int p = kParams - 1; p >= 0; --p) {
        t += kMsNs + extra(spec, rank, it, "backward", p) + jitter(spec, rank, it, 2 + p);
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
      for (int bucket : {0, 1}) {  // DDP's own span of each bucket's allreduce, as the engine records it
        probes::BatchEvent b =
            known_span(Kind::Allreduce, 4, bucket ? arrive1[r] : arrive0[r], bucket ? end1 : end0, it, 1);
        b.bucket = static_cast<int16_t>(bucket);
        b.id = 2 * it + bucket;
        ev.push_back(b);
      }
      ev.push_back(known_span(Kind::Backward, 2, backward[r], end1, it));
      ev.push_back(known_span(Kind::Finalize, 2, arrive1[r], end1, it));  // backward's end waits for the buckets
      after_opt[r] = end1 + kMsNs + extra(spec, static_cast<int>(r), it, "optimizer") +
                     jitter(spec, static_cast<int>(r), it, 2 + kParams);
      ev.push_back(known_span(Kind::Optimizer, 3, end1, after_opt[r], it));
      probes::BatchEvent iteration = known_span(Kind::Iteration, 0, begin[r], after_opt[r], it);
      if (r == 0 && it == spec.cut_iteration) iteration.flags = probes::kEndedByError;
      ev.push_back(iteration);
      for (const char* phase : {"outside_step", "forward", "backward", "optimizer"}) {
        if (spec.cpu_wait_share < 0) break;
        const double waited = spec.cpu_wait_share * extra(spec, static_cast<int>(r), it, phase, spec.layer) / 1e6 +
                              (std::string(phase) == "outside_step" ? spec.cpu_wait_each_ms : 0);
        batches[r].records.push_back("{\"type\":\"metric\",\"iteration\":" + std::to_string(it) +
                                     ",\"name\":\"cpu_wait_ms." + phase + "\",\"value\":" + std::to_string(waited) +
                                     "}");
      }
    }
    sync = end1;
  }
  probes::RunStoreWriter w(path);
  w.begin_run({.world_size = std::max(spec.ranks, spec.world_size)});
  for (const probes::EventBatch& b : batches)
    w.write(b);
  if (!spec.running) w.end_run("finished");
}

}  // namespace ddpscope::testing
