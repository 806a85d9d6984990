// Run files with known contents for the GUI tests, written through the real run store.
#pragma once

#include <string>
#include <vector>

#include "run_store_writer.h"

namespace ddpscope::gui::testing {

// `ranks` ranks, `iterations` iterations each of 1000 ns starting at 1000 * (i - 1):
// forward [0, 200], backward [200, 800] with finalize [700, 800], bucket 0 allreduce
// [300, 500] (hidden), bucket 1 allreduce [650, 760] (60 ns exposed), bucket 1 ready at
// 640, optimizer [800, 900]. Buckets: 0 = {w}, 1 = {b}. The last rank's allreduces start
// `last_rank_lag_ns` later (a straggler); `rebuilt` adds a generation 1 with the buckets
// swapped (0 = {b}, 1 = {w}).
// Writes iterations [from, to] of one rank as one batch (the bucket records with the first).
inline void write_iterations(ddpscope::probes::RunStoreWriter& w, int rank, int from, int to, int64_t lag_ns = 0,
                             bool rebuilt = false) {
  using namespace ddpscope::probes;
  {
    EventBatch b;
    b.rank = rank;
    b.threads = {{0, 100, "compute"}, {1, 101, "comm"}};
    b.names = {"iteration", "forward", "backward", "finalize", "allreduce", "optimizer", "bucket_ready"};
    // A bucket allreduce carries its sequence number, the same on every rank: 2 per iteration.
    auto ev = [&](Kind kind, uint32_t name, int64_t t0, int64_t t1, int it, int16_t bucket, int64_t bytes,
                  uint16_t thread) {
      const int64_t seq = kind == Kind::Allreduce ? 2 * int64_t{it - 1} + bucket : -1;
      b.events.push_back(
          BatchEvent{t0, t1, bytes, seq, -1, it, -1, name, bucket, -1, thread, static_cast<uint8_t>(kind), 0});
    };
    for (int it = from; it <= to; ++it) {
      const int64_t o = 1000 * int64_t{it - 1};
      ev(Kind::Iteration, 0, o, o + 1000, it, -1, -1, 0);
      ev(Kind::Forward, 1, o, o + 200, it, -1, -1, 0);
      ev(Kind::Backward, 2, o + 200, o + 800, it, -1, -1, 0);
      ev(Kind::Finalize, 3, o + 700, o + 800, it, -1, -1, 0);
      ev(Kind::BucketReady, 6, o + 640, o + 640, it, 1, -1, 0);
      ev(Kind::Optimizer, 5, o + 800, o + 900, it, -1, -1, 0);
    }
    for (int it = from; it <= to; ++it) {
      const int64_t o = 1000 * int64_t{it - 1} + lag_ns;
      ev(Kind::Allreduce, 4, o + 300, o + 500, it, 0, 4096, 1);
      ev(Kind::Allreduce, 4, o + 650, o + 760, it, 1, 128, 1);
    }
    if (from == 1)
      b.records = {R"j({"type":"buckets","generation":0,"buckets":[{"bucket":0,"bytes":4096,"params":[0]},)j"
                   R"j({"bucket":1,"bytes":128,"params":[1]}],"params":[{"index":0,"name":"w","shape":[32,32],)j"
                   R"j("dtype":"f32","bucket":0,"offset":0},{"index":1,"name":"b","shape":[32],"dtype":"f32",)j"
                   R"j("bucket":1,"offset":0}]})j"};
    if (rebuilt && from == 1) {
      b.records.push_back(
          R"j({"type":"buckets","generation":1,"buckets":[{"bucket":0,"bytes":128,"params":[1]},)j"
          R"j({"bucket":1,"bytes":4096,"params":[0]}],"params":[{"index":0,"name":"w","shape":[32,32],)j"
          R"j("dtype":"f32","bucket":1,"offset":0},{"index":1,"name":"b","shape":[32],"dtype":"f32",)j"
          R"j("bucket":0,"offset":0}]})j");
    }
    w.write(b);
  }
}

// One RPC message as both ends record it (RUN_FILE.md, "RPC messages"): an rpc_send span
// on `src` at `t_send` and an rpc_recv span on `dst` at `t_recv` (either end -1: not
// written). `type`: the wire code (1 call, 2 response, 3 error, 5 rref_fetch, ...).
struct TestMessage {
  int src, dst;
  int64_t t_send, t_recv;
  int64_t msg_id, ctx_id;
  int type;
  std::string name;
  int64_t bytes = 100;
};
inline void write_messages(ddpscope::probes::RunStoreWriter& w, const std::vector<TestMessage>& messages, int ranks) {
  using namespace ddpscope::probes;
  for (int rank = 0; rank < ranks; ++rank) {
    EventBatch b;
    b.rank = rank;
    b.threads = {{0, 200, "rpc: receive"}};
    for (const auto& m : messages) {
      const bool send = m.src == rank && m.t_send >= 0, recv = m.dst == rank && m.t_recv >= 0;
      for (int end = 0; end < 2; ++end) {
        if (end == 0 ? !send : !recv) continue;
        const int64_t t = end == 0 ? m.t_send : m.t_recv;
        b.names.push_back(m.name);
        b.events.push_back(BatchEvent{t, t + 10, m.bytes, m.ctx_id, m.msg_id, -1, m.type,
                                      static_cast<uint32_t>(b.names.size() - 1), -1,
                                      static_cast<int16_t>(end == 0 ? m.dst : m.src), 0,
                                      static_cast<uint8_t>(end == 0 ? Kind::RpcSend : Kind::RpcRecv), 0});
      }
    }
    if (!b.events.empty()) w.write(b);
  }
}

// A small RPC exchange, as seed 000's example makes it: worker 0 calls add on worker 1
// (1000 -> 1100) and gets the answer (1200 -> 1300); in context 7 the gradients go to
// worker 1 and back (2000 -> 2100, 2200 -> 2300, with the answers); an RRef fetch; and a
// call still on its way (sent at 3000, never received).
inline std::vector<TestMessage> seed_messages() {
  return {{0, 1, 1000, 1100, 1, -1, 1, "add", 210},
          {1, 0, 1200, 1300, 1, -1, 2, "add", 132},
          {0, 1, 2000, 2100, 2, 7, 1, "_ddpscope.dist_backward", 204},
          {1, 0, 2200, 2300, (int64_t{1} << 48) | 2, 7, 1, "_ddpscope.dist_backward", 264},
          {0, 1, 2350, 2400, (int64_t{1} << 48) | 2, 7, 2, "_ddpscope.dist_backward", 96},
          {1, 0, 2450, 2500, 2, 7, 2, "_ddpscope.dist_backward", 105},
          {0, 1, 2600, 2650, 3, -1, 5, "rref_fetch", 60},
          {0, 1, 2700, 2750, 4, 7, 1, "_ddpscope.release_context", 130},
          {1, 0, 2800, 2900, 9, -1, 3, "boom", 80},
          {0, 1, 3000, -1, 5, -1, 1, "sleep_ms", 120}};
}

inline void write_test_run(const std::string& path, int ranks, int iterations, const std::string& status = "finished",
                           int64_t last_rank_lag_ns = 0, bool rebuilt = false) {
  ddpscope::probes::RunStoreWriter w(path);
  w.begin_run({R"({"model":"mlp"})", ranks, "mpi", "mlp"});
  for (int rank = 0; rank < ranks; ++rank)
    write_iterations(w, rank, 1, iterations, rank == ranks - 1 ? last_rank_lag_ns : 0, rebuilt);
  if (status != "running") w.end_run(status);
}

// Seed 000's pass as both workers record it (RUN_FILE.md): worker 0 holds the root,
// t1, t2 and t4 and the recv of t3; worker 1 the add between its recv (t1, t2) and its
// send (t3). AddBackward ran 2 us in the context.
inline void write_seed_graphs(const std::string& file) {
  using namespace ddpscope::probes;
  RunStoreWriter w(file);
  w.begin_run({R"j({"job":"example"})j", 2, "mpi", "example"});
  const std::string reply = std::to_string((int64_t{1} << 47) | 1);  // the reply to message 0:1
  EventBatch b0;
  b0.rank = 0;
  b0.threads = {{0, 1, "example seed"}};
  b0.records = {R"j({"type":"graph","ctx_id":1,"iteration":1,"nodes":[[0,"GraphRoot","graph_root",0,7],)j"
                R"j([1,"SendRpcBackward","send",0,0,1,1],[2,"SumBackward","operation",1,6],)j"
                R"j([3,"AccumulateGrad(t1)","accumulate_grad",1,1],[4,"AccumulateGrad(t2)","accumulate_grad",1,2],)j"
                R"j([5,"MulBackward","operation",1,4],[6,"RecvRpcBackward","recv",1,3,)j" +
                reply +
                R"j(,1],)j"
                R"j([7,"AccumulateGrad(t4)","accumulate_grad",1,5]],)j"
                R"j("edges":[[0,2,0],[2,5,0],[5,6,0],[5,7,1],[1,3,0],[1,4,1]]})j"};
  w.write(b0);
  EventBatch b1;
  b1.rank = 1;
  b1.threads = {{0, 2, "rpc: receive"}};
  b1.names = {"AddBackward"};
  b1.events.push_back(
      BatchEvent{5000, 7000, -1, 1, 1, -1, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::AutogradNode), 0});
  b1.records = {R"j({"type":"graph","ctx_id":1,"iteration":1,"nodes":[[0,"SendRpcBackward","send",0,2,)j" + reply +
                R"j(,0],[1,"AddBackward","operation",1,1],[2,"RecvRpcBackward","recv",2,0,1,0]],)j"
                R"j("edges":[[0,1,0],[1,2,0],[1,2,1]]})j"};
  w.write(b1);
  w.end_run("finished");
}

}  // namespace ddpscope::gui::testing
