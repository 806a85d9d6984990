#include "types.h"

#include <cstdlib>
#include <cstring>

#include "ddpscope/error.h"
#include "ddpscope/env.h"

namespace ddpscope::c10d {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
    case ReduceOp::Product: return "product";
  }
  return "?";
}

const char* op_type_name(OpType op) {
  switch (op) {
    case OpType::Allreduce: return "allreduce";
    case OpType::AllreduceCoalesced: return "allreduce_coalesced";
    case OpType::Broadcast: return "broadcast";
    case OpType::BroadcastCoalesced: return "broadcast_coalesced";
    case OpType::Allgather: return "allgather";
    case OpType::ReduceScatter: return "reduce_scatter";
    case OpType::Alltoall: return "alltoall";
    case OpType::Barrier: return "barrier";
    case OpType::Send: return "send";
    case OpType::Recv: return "recv";
    case OpType::NewGroup: return "new_group";
  }
  return "?";
}

std::string timeout_message(std::string message) {
  const char* garble = std::getenv("DDPSCOPE_TEST_GARBLE_TIMEOUTS");
  if (!garble || std::strcmp(garble, "1") != 0) return message;
  return "Zeitüberschreitung: die Kollektivoperation wurde nicht beendet (test text, no names or numbers)";
}

ProcessGroupOptions ProcessGroupOptions::from_environment() {
  ProcessGroupOptions o;
  o.timeout = Milliseconds(env_int("DDPSCOPE_PG_TIMEOUT_MS", o.timeout.count(), 1));
  if (const char* d = std::getenv("DDPSCOPE_DEBUG")) o.check_consistency = std::strcmp(d, "detail") == 0;
  return o;
}

}  // namespace ddpscope::c10d
