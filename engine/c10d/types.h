// Value types of the communication layer: reduce ops, op kinds, per-call options.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ddpscope::c10d {

enum class ReduceOp { Sum, Avg, Min, Max, Product };
const char* reduce_op_name(ReduceOp op);

enum class OpType {
  Allreduce,
  AllreduceCoalesced,
  Broadcast,
  Allgather,
  ReduceScatter,
  Alltoall,
  Barrier,
  Send,
  Recv,
  NewGroup
};
const char* op_type_name(OpType op);

using Milliseconds = std::chrono::milliseconds;
// Zero: use the group's timeout.
constexpr Milliseconds kUseGroupTimeout{0};

struct AllreduceOptions {
  ReduceOp op = ReduceOp::Sum;
  Milliseconds timeout = kUseGroupTimeout;
};
struct BroadcastOptions {
  int root = 0;
  Milliseconds timeout = kUseGroupTimeout;
};
struct ReduceScatterOptions {
  ReduceOp op = ReduceOp::Sum;
  Milliseconds timeout = kUseGroupTimeout;
};
struct CollectiveOptions {
  Milliseconds timeout = kUseGroupTimeout;
};

// Options of a whole group. The default timeout is 30 minutes; DDPSCOPE_PG_TIMEOUT_MS
// overrides it for every group created afterwards.
struct ProcessGroupOptions {
  Milliseconds timeout = std::chrono::minutes(30);
  std::string name = "world";
  // DDPSCOPE_DEBUG=detail: ranks check before each collective that they all call the
  // same op (sequence number, dtype, shape).
  bool check_consistency = false;
  static ProcessGroupOptions from_environment();
};

}  // namespace ddpscope::c10d
