#include "comm_hook.h"

#include "tensor/kernels.h"

namespace ddpscope::ddp {
namespace {

CommHook compress_hook(std::shared_ptr<c10d::ProcessGroup> group, DType wire) {
  return [group, wire](GradBucket& bucket) {
    Tensor scaled = bucket.buffer.clone();
    kernels::scale_(scaled, 1.0 / group->size());
    Tensor compressed = scaled.to(wire);
    Tensor target = bucket.buffer;
    return group->allreduce(compressed)->get_future()->then([target](c10d::Future& f) {
      kernels::copy(target, f.value()[0]);  // decompress into the bucket
      return std::vector<Tensor>{target};
    });
  };
}

}  // namespace

CommHook allreduce_hook(std::shared_ptr<c10d::ProcessGroup> group) {
  return [group](GradBucket& bucket) {
    return group->allreduce(bucket.buffer, {.op = c10d::ReduceOp::Avg})->get_future();
  };
}

CommHook fp16_compress_hook(std::shared_ptr<c10d::ProcessGroup> group) {
  return compress_hook(std::move(group), DType::F16);
}

CommHook bf16_compress_hook(std::shared_ptr<c10d::ProcessGroup> group) {
  return compress_hook(std::move(group), DType::BF16);
}

}  // namespace ddpscope::ddp
