// Structured records: what the engine reports besides spans (bucket assignments, the
// parameter table, autograd graphs, metrics). Not on the hot path: each call encodes one
// JSON object and queues it under a lock; the shipper sends it with the next batch.
// Every function does nothing while probes are off.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddpscope::probes {

struct ParamRecord {
  int32_t index = 0;  // registration order
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;
  int32_t bucket = -1;
  int64_t offset = 0;  // elements into the bucket's buffer
};

struct BucketRecord {
  int32_t bucket = 0;
  int64_t bytes = 0;
  std::vector<int32_t> params;  // in the bucket's order
};

struct GraphNodeRecord {
  uint32_t id = 0;
  std::string op;
  std::string kind;  // operation | accumulate_grad | root | send | recv
  int32_t dependencies = 0;
  uint64_t sequence_nr = 0;
  int64_t msg_id = -1;  // send/recv: the autograd message id shared with the other end
  int32_t peer = -1;    // send/recv: the worker holding the other end
};

struct GraphEdgeRecord {
  uint32_t src = 0;  // gradient flows src -> dst
  uint32_t dst = 0;
  uint32_t input_nr = 0;
};

// ZeRO's partition: which rank updates each parameter (and keeps its optimizer state).
struct ShardRecord {
  int32_t index = 0;  // into the optimizer's parameters (a DDP model's: registration order)
  std::string name;
  int64_t numel = 0;
  int32_t owner = 0;
};

// generation 0 is the first assignment, 1 the rebuild from the gradient-ready order.
void record_bucket_assignment(int32_t generation, const std::vector<BucketRecord>& buckets,
                              const std::vector<ParamRecord>& params);
// ctx_id -1: a local backward graph.
void record_graph(int64_t ctx_id, int64_t iteration, const std::vector<GraphNodeRecord>& nodes,
                  const std::vector<GraphEdgeRecord>& edges);
void record_metric(int64_t iteration, std::string_view name, double value);
void record_zero_partition(int32_t world_size, const std::vector<ShardRecord>& params);

// Queued records (JSON texts) handed to the shipper.
std::vector<std::string> take_records();
// Queues an already-encoded record (the session's rank description).
void queue_record(std::string json);

}  // namespace ddpscope::probes
