#include "records.h"

#include <mutex>
#include <nlohmann/json.hpp>

#include "json_number.h"
#include "probe.h"

namespace ddpscope::probes {
namespace {

std::mutex g_mutex;
std::vector<std::string>& queue() {
  static auto* q = new std::vector<std::string>;
  return *q;
}

}  // namespace

void queue_record(std::string json) {
  std::lock_guard<std::mutex> lock(g_mutex);
  queue().push_back(std::move(json));
}

std::vector<std::string> take_records() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<std::string> out;
  out.swap(queue());
  return out;
}

void record_bucket_assignment(int32_t generation, const std::vector<BucketRecord>& buckets,
                              const std::vector<ParamRecord>& params) {
  if (!enabled()) return;
  nlohmann::json b = nlohmann::json::array(), p = nlohmann::json::array();
  for (const auto& r : buckets)
    b.push_back({{"bucket", r.bucket}, {"bytes", r.bytes}, {"params", r.params}});
  for (const auto& r : params) {
    p.push_back({{"index", r.index},
                 {"name", r.name},
                 {"shape", r.shape},
                 {"dtype", r.dtype},
                 {"bucket", r.bucket},
                 {"offset", r.offset}});
  }
  queue_record(nlohmann::json{{"type", "buckets"}, {"generation", generation}, {"buckets", b}, {"params", p}}.dump());
}

void record_graph(int64_t ctx_id, int64_t iteration, const std::vector<GraphNodeRecord>& nodes,
                  const std::vector<GraphEdgeRecord>& edges) {
  if (!enabled()) return;
  nlohmann::json n = nlohmann::json::array(), e = nlohmann::json::array();
  for (const auto& r : nodes) {
    if (r.msg_id >= 0) {
      n.push_back({r.id, r.op, r.kind, r.dependencies, r.sequence_nr, r.msg_id, r.peer});
    } else {
      n.push_back({r.id, r.op, r.kind, r.dependencies, r.sequence_nr});
    }
  }
  for (const auto& r : edges)
    e.push_back({r.src, r.dst, r.input_nr});
  queue_record(
      nlohmann::json{{"type", "graph"}, {"ctx_id", ctx_id}, {"iteration", iteration}, {"nodes", n}, {"edges", e}}
          .dump());
}

void record_metric(int64_t iteration, std::string_view name, double value) {
  if (!enabled()) return;
  queue_record(
      nlohmann::json{{"type", "metric"}, {"iteration", iteration}, {"name", name}, {"value", json_number(value)}}
          .dump());
}

void record_zero_partition(int32_t world_size, const std::vector<ShardRecord>& params) {
  if (!enabled()) return;
  nlohmann::json p = nlohmann::json::array();
  for (const auto& r : params)
    p.push_back({r.index, r.name, r.numel, r.owner});
  queue_record(nlohmann::json{{"type", "zero_partition"}, {"world_size", world_size}, {"params", p}}.dump());
}

}  // namespace ddpscope::probes
