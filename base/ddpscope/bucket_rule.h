// DDP's bucket-closing rule, the one implementation: the reducer packs gradients with it
// (engine/ddp/bucket_assigner) and bucket advice replays it at other caps
// (probes/bucket_advice). Gradients are taken in the order they become ready; a bucket
// closes as soon as it holds at least its cap, so it may pass the cap by the gradient
// that crossed it; the first bucket has a cap of its own (PyTorch: 1 MiB) so the first
// allreduce starts early in backward; a partly filled bucket closes at the end.
// Also the names a run file gives dtypes, and the keys of the settings a DDP job records
// in its run (runs.config_json), which the trainer writes and the advice reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ddpscope {

struct BucketCapBytes {
  int64_t first = int64_t{1} << 20;  // first_bucket_cap_mb = 1
  int64_t rest = int64_t{25} << 20;  // bucket_cap_mb = 25
};

// Whether a bucket holding `held` bytes closes; `first`: no bucket has closed before it.
inline bool bucket_closes(int64_t held, bool first, const BucketCapBytes& caps) {
  return held >= (first ? caps.first : caps.rest);
}

// Sizes (in ready order) packed into buckets: per bucket, the index of its last size.
inline std::vector<size_t> pack_buckets(const std::vector<int64_t>& bytes, const BucketCapBytes& caps) {
  std::vector<size_t> last;
  int64_t held = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    held += bytes[i];
    if (bucket_closes(held, last.empty(), caps)) {
      last.push_back(i);
      held = 0;
    }
  }
  if (!bytes.empty() && (last.empty() || last.back() != bytes.size() - 1)) last.push_back(bytes.size() - 1);
  return last;
}

// Bytes per element of a dtype by the name the run file stores (params.dtype: "f32",
// "f16", "bf16", "f64", "i64"); 4 for a name it does not know.
inline int64_t dtype_name_bytes(std::string_view name) {
  if (name == "f64" || name == "i64") return 8;
  if (name == "f16" || name == "bf16") return 2;
  return 4;
}

// The settings a DDP job records in runs.config_json.
namespace run_settings {
inline constexpr const char* kBucketCapMb = "bucket_cap_mb";
inline constexpr const char* kFirstBucketCapMb = "first_bucket_cap_mb";
inline constexpr const char* kFusedOptimizer = "fused_optimizer";
}  // namespace run_settings

}  // namespace ddpscope
