// Runs with known times that the run-store tests write: one iteration of one rank whose
// every span is known (and so every overlap figure), and 2-rank runs that failed in a
// collective, for the hang verdict.
#pragma once

#include <functional>
#include <string>
#include <vector>
#include "hang_analysis.h"
#include "run_store_reader.h"
#include "run_store_writer.h"

namespace ddpscope::probes::known_runs {

inline BatchEvent event(Kind kind, uint32_t name, int64_t b, int64_t e, int32_t iteration, int16_t bucket = -1,
                        int64_t bytes = -1, uint16_t thread = 0) {
  return BatchEvent{b, e, bytes, -1, -1, iteration, -1, name, bucket, -1, thread, static_cast<uint8_t>(kind), 0};
}

// One rank, one iteration with known times (ns):
//   iteration [0, 1000]; forward [0, 200]; backward [200, 800]; finalize [700, 800]
//   bucket 0 allreduce [300, 500] (hidden); bucket 1 allreduce [650, 760] (exposed 50..60)
//   optimizer [800, 900]; bucket 1 ready at 640.
inline EventBatch known_iteration(int rank, int64_t offset_ns = 0) {
  EventBatch b;
  b.rank = rank;
  b.clock_offset_ns = offset_ns;
  b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
  b.names = {"iteration", "forward", "backward", "finalize", "allreduce", "optimizer", "bucket_ready"};
  b.events = {event(Kind::Iteration, 0, 0, 1000, 1),
              event(Kind::Forward, 1, 0, 200, 1),
              event(Kind::Backward, 2, 200, 800, 1),
              event(Kind::Finalize, 3, 700, 800, 1),
              event(Kind::Allreduce, 4, 300, 500, 1, 0, 4096, 1),
              event(Kind::Allreduce, 4, 650, 760, 1, 1, 8192, 1),
              event(Kind::BucketReady, 6, 640, 640, 1, 1),
              event(Kind::Optimizer, 5, 800, 900, 1)};
  b.records = {R"j({"type":"metric","iteration":1,"name":"loss","value":0.5})j",
               R"j({"type":"buckets","generation":0,"buckets":[{"bucket":0,"bytes":4096,"params":[1,0]}],)j"
               R"j("params":[{"index":0,"name":"w","shape":[32,32],"dtype":"f32","bucket":0,"offset":0},)j"
               R"j({"index":1,"name":"b","shape":[32],"dtype":"f32","bucket":0,"offset":1024}]})j",
               R"j({"type":"graph","ctx_id":-1,"iteration":1,"nodes":[[0,"MseLossBackward","operation",0,5],)j"
               R"j([1,"AccumulateGrad(w)","accumulate_grad",1,0]],"edges":[[0,1,0]]})j"};
  return b;
}

// A 2-rank run written to `file` that failed with `message` reported by rank 0: each rank
// has iteration 1 (0-1000 ns) on its compute thread, then `ops(rank)` on its comm thread.
// `failed`: the collective rank 0's failure ended, as it typed it (schema 16).
inline HangReport hang_of_failed_run(const std::string& file, const std::function<std::vector<BatchEvent>(int)>& ops,
                                     const std::string& message, const FailedCollective& failed = {}) {
  {
    RunStoreWriter w(file);
    w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
    for (int rank = 0; rank < 2; ++rank) {
      EventBatch b;
      b.rank = rank;
      b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
      b.names = {"iteration", "allreduce"};
      b.events.push_back(BatchEvent{0, 1000, -1, -1, -1, 1, -1, 0, -1, -1, 0, uint8_t(Kind::Iteration), 0});
      for (const BatchEvent& e : ops(rank))
        b.events.push_back(e);
      w.write(b);
    }
    w.end_run(RunEnd{"failed", message, 0, -1, {}, failed});
  }
  RunStoreReader run(file);
  return analyze_hang(run);
}

// Allreduce #seq on the comm thread: started (no end yet), or done.
inline BatchEvent allreduce_started(int64_t seq, int64_t bytes, int64_t t) {
  return BatchEvent{t, t, bytes, seq, -1, 2, -1, 1, -1, -1, 1, uint8_t(Kind::PgOpStart), 0};
}
inline BatchEvent allreduce_done(int64_t seq, int64_t t) {
  return BatchEvent{t, t + 100, 8, seq, -1, 1, -1, 1, -1, -1, 1, uint8_t(Kind::PgOp), 0};
}

}  // namespace ddpscope::probes::known_runs
