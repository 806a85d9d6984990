// Assignment of parameters to DDP gradient buckets.
//
// Gradients become ready roughly in reverse registration order (the last layer's
// first), so parameters are walked in that order and packed into buckets, separately
// for each (dtype, device), by DDP's closing rule (ddpscope/bucket_rule.h: a bucket
// closes once it holds at least its cap; the first bucket of each (dtype, device) has a
// smaller cap, 1 MiB by default, so the first allreduce starts early in backward). After the first iteration the
// reducer rebuilds the buckets from the order in which gradients actually arrived, by passing that order here.
#pragma once

#include <cstddef>
#include <vector>

#include "tensor/tensor.h"

namespace ddpscope::ddp {

struct BucketSpec {
  std::vector<size_t> params;  // indices into the parameter list, in ready order
  size_t bytes = 0;
  DType dtype = DType::F32;
  Device device;
};

struct BucketCaps {
  size_t first_bytes = size_t{1} << 20;  // PyTorch's first-bucket cap: 1 MiB
  size_t bytes = size_t{25} << 20;       // bucket_cap_mb = 25
};

// `ready_order` lists every parameter index once, in the order gradients are expected
// to be ready; empty means reverse registration order.
std::vector<BucketSpec> assign_buckets(const std::vector<Tensor>& params, const BucketCaps& caps,
                                       const std::vector<size_t>& ready_order = {});

}  // namespace ddpscope::ddp
