// Value types of the communication layer: reduce ops, op kinds, per-call options.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ddpscope::c10d {

enum class ReduceOp { Sum, Avg, Min, Max, Product };
const char* reduce_op_name(ReduceOp op);

enum class OpType {
  Allreduce,
  AllreduceCoalesced,
  Broadcast,
  BroadcastCoalesced,
  Allgather,
  ReduceScatter,
  Alltoall,
  Barrier,
  Send,
  Recv,
  NewGroup
};
const char* op_type_name(OpType op);

// A timeout's message as errors and logs show it. DDPSCOPE_TEST_GARBLE_TIMEOUTS=1 (the
// fault suite) replaces its words, to prove no verdict is drawn from them.
std::string timeout_message(std::string message);

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
  // What the group is for, as the flight recorder shows it ("default", "ddp", ...).
  std::string description = "default";
  // The members' global ranks, in group order (empty: 0..size-1, the world).
  std::vector<int> global_ranks;
  // DDPSCOPE_DEBUG=detail: ranks check before each collective that they all call the
  // same op (sequence number, dtype, shape).
  bool check_consistency = false;
  static ProcessGroupOptions from_environment();
};

}  // namespace ddpscope::c10d
