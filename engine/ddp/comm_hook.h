// Communication hooks: replace how a DDP bucket is reduced (PyTorch's
// register_comm_hook). A hook receives the bucket and returns a future of the reduced
// (averaged) flat tensor; the reducer waits for it at the end of backward and copies it
// into the bucket. State a hook needs is captured by the std::function.
//
//   ddp.register_comm_hook(ddp::fp16_compress_hook(group));
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "c10d/future.h"
#include "c10d/process_group.h"

namespace ddpscope::ddp {

struct GradBucket {
  size_t index = 0;
  Tensor buffer;                   // flat gradients of the bucket (reduce this)
  std::vector<Tensor> parameters;  // in bucket order
  bool is_last = false;            // the last bucket of this backward
};

using CommHook = std::function<std::shared_ptr<c10d::Future>(GradBucket&)>;

// The default: allreduce with averaging.
CommHook allreduce_hook(std::shared_ptr<c10d::ProcessGroup> group);
// Compress to f16 (or bf16), pre-divided by the world size so the sum cannot overflow,
// allreduce, decompress into the bucket: half the bytes on the wire.
CommHook fp16_compress_hook(std::shared_ptr<c10d::ProcessGroup> group);
CommHook bf16_compress_hook(std::shared_ptr<c10d::ProcessGroup> group);

}  // namespace ddpscope::ddp
