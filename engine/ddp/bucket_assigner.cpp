#include "bucket_assigner.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ddpscope/bucket_rule.h"
#include "ddpscope/error.h"

namespace ddpscope::ddp {

std::vector<BucketSpec> assign_buckets(const std::vector<Tensor>& params, const BucketCaps& caps,
                                       const std::vector<size_t>& ready_order) {
  DDPSCOPE_CHECK(caps.bytes > 0 && caps.first_bytes > 0, "bucket caps must be positive");
  std::vector<size_t> order = ready_order;
  if (order.empty()) {
    for (size_t i = params.size(); i-- > 0;)
      order.push_back(i);
  }
  DDPSCOPE_CHECK(order.size() == params.size(), "bucket assignment: the ready order lists ", order.size(),
                 " parameters but the model has ", params.size());
  std::set<size_t> seen;
  for (size_t i : order) {
    DDPSCOPE_CHECK(i < params.size() && seen.insert(i).second, "bucket assignment: ready order entry ", i,
                   " is out of range or repeated");
  }

  // One open bucket per (dtype, device); closed buckets in the order they closed.
  struct Key {
    DType dtype;
    DeviceType type;
    int index;
    bool operator<(const Key& o) const { return std::tie(dtype, type, index) < std::tie(o.dtype, o.type, o.index); }
  };
  struct Open {
    BucketSpec bucket;
    bool first = true;
  };
  std::map<Key, Open> open;
  std::vector<BucketSpec> closed;
  for (size_t i : order) {
    const Tensor& p = params[i];
    const Key key{p.dtype(), p.device().type, p.device().index};
    Open& o = open[key];
    o.bucket.dtype = p.dtype();
    o.bucket.device = p.device();
    o.bucket.params.push_back(i);
    o.bucket.bytes += p.nbytes();
    if (bucket_closes(static_cast<int64_t>(o.bucket.bytes), o.first,
                      {static_cast<int64_t>(caps.first_bytes), static_cast<int64_t>(caps.bytes)})) {
      closed.push_back(std::move(o.bucket));
      o.bucket = BucketSpec{};
      o.first = false;
    }
  }
  // Partly filled buckets close at the end, in the order of their first parameter.
  std::vector<BucketSpec> rest;
  for (auto& [key, o] : open) {
    if (!o.bucket.params.empty()) rest.push_back(std::move(o.bucket));
  }
  std::map<size_t, size_t> position;
  for (size_t k = 0; k < order.size(); ++k)
    position[order[k]] = k;
  std::sort(rest.begin(), rest.end(), [&](const BucketSpec& a, const BucketSpec& b) {
    return position[a.params.front()] < position[b.params.front()];
  });
  for (auto& b : rest)
    closed.push_back(std::move(b));
  return closed;
}

}  // namespace ddpscope::ddp
