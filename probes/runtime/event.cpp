// The names of event.h's kinds, apart from the probe runtime: readers of run files (the
// CLI, the app, the run-file fuzzer) need them without the recording machinery.
#include "event.h"

namespace ddpscope::probes {

const char* rpc_message_kind_name(int kind) {
  static constexpr const char* kNames[] = {"unknown",           "call",       "response",         "error",
                                           "remote_call",       "rref_fetch", "rref_user_delete", "rref_fork_request",
                                           "rref_child_accept", "ack"};
  return kind >= 1 && kind <= 9 ? kNames[kind] : kNames[0];
}

const char* kind_name(Kind kind) {
  static constexpr const char* kNames[kNumKinds] = {
      "iteration",   "forward",      "backward",         "optimizer",     "autograd_node", "grad_ready",
      "bucket_copy", "bucket_ready", "allreduce",        "comm_hook",     "finalize",      "pg_op",
      "barrier",     "rpc_send",     "rpc_recv",         "dist_backward", "mark",          "pg_op_start",
      "rpc_call",    "rref",         "dist_context",     "dist_function", "dependency",    "gpu_kernel",
      "gpu_comm",    "gpu_memcpy",   "gpu_memset",       "cuda_runtime",  "cpu_op",        "param_sync",
      "ring_step",   "link_test",    "collective_failed"};
  const auto i = static_cast<int>(kind);
  return i < kNumKinds ? kNames[i] : "unknown";
}

}  // namespace ddpscope::probes
