#include "types.h"

#include <cstdlib>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::c10d {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Product:
      return "product";
  }
  return "?";
}

const char* op_type_name(OpType op) {
  switch (op) {
    case OpType::Allreduce:
      return "allreduce";
    case OpType::AllreduceCoalesced:
      return "allreduce_coalesced";
    case OpType::Broadcast:
      return "broadcast";
    case OpType::Allgather:
      return "allgather";
    case OpType::ReduceScatter:
      return "reduce_scatter";
    case OpType::Alltoall:
      return "alltoall";
    case OpType::Barrier:
      return "barrier";
    case OpType::Send:
      return "send";
    case OpType::Recv:
      return "recv";
    case OpType::NewGroup:
      return "new_group";
  }
  return "?";
}

ProcessGroupOptions ProcessGroupOptions::from_environment() {
  ProcessGroupOptions o;
  if (const char* t = std::getenv("DDPSCOPE_PG_TIMEOUT_MS")) {
    char* end = nullptr;
    const long long ms = std::strtoll(t, &end, 10);
    DDPSCOPE_CHECK(end != t && *end == '\0' && ms > 0, "DDPSCOPE_PG_TIMEOUT_MS='", t,
                   "' is not a positive number of milliseconds");
    o.timeout = Milliseconds(ms);
  }
  if (const char* d = std::getenv("DDPSCOPE_DEBUG"))
    o.check_consistency = std::strcmp(d, "detail") == 0;
  return o;
}

}  // namespace ddpscope::c10d
