// What an RPC agent is configured with and reports: its options, the workers it knows,
// its counters and its error type (rpc_agent.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ddpscope/error.h"
#include "transport.h"

namespace ddpscope::rpc {

using Milliseconds = std::chrono::milliseconds;

struct WorkerInfo {
  std::string name;
  int32_t id = -1;
};

struct RpcBackendOptions {
  // Default deadline of a call (PyTorch's default: 60 s). DDPSCOPE_RPC_TIMEOUT_MS overrides.
  Milliseconds rpc_timeout{60000};
  int num_worker_threads = 4;    // threads kept for incoming calls
  int max_worker_threads = 256;  // the pool grows to this while calls block
  // Where this worker listens. Empty: 127.0.0.1 when every worker runs on this host,
  // else DDPSCOPE_RPC_ADDRESS, else the first non-loopback IPv4 address of this host.
  std::string listen_address;
  int64_t max_frame_bytes = int64_t{1} << 32;  // larger frames are refused by the transport
  // "shm", "tcp" or "zmq" (transport_choice.h); empty: DDPSCOPE_RPC_TRANSPORT, else shm.
  std::string transport;
  // Empty: DDPSCOPE_RUN_TOKEN (set by the launcher), else made by worker 0 and shared.
  std::string token;
  Milliseconds control_retry_interval{250};  // RRef control messages resent this often
  bool ignore_rref_leaks = false;            // shutdown() reports leaks instead of throwing
  // Tests: wraps the transport the job opened (to delay or drop messages, say).
  std::function<std::unique_ptr<Transport>(std::unique_ptr<Transport>)> wrap_transport;
};

// What every worker of a job agrees on before its agent serves: who is who, where each
// listens, and the token every message must carry.
struct WorkerSetup {
  int32_t self = -1;
  std::vector<WorkerInfo> workers;     // workers[id].id == id
  std::vector<std::string> endpoints;  // the transport's endpoint of each worker
  std::string token;
};

// Counters of what the agent saw; readable at any time.
struct AgentStats {
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t rejected_token = 0;      // messages without the job's token
  uint64_t rejected_malformed = 0;  // truncated, oversized, unknown type or dtype, ...
  uint64_t calls_served = 0;
  uint64_t late_replies = 0;  // replies to calls that had timed out already
  uint64_t control_retries = 0;
  std::string last_rejection;  // why the last message was refused
};

// Errors of RPC: a remote function's failure ("Error on worker 1 (worker1): ..."), a
// timeout, an unknown worker or function, a closed agent.
class RpcError : public Error {
 public:
  explicit RpcError(const std::string& what) : Error(what, "rpc", 0) {}
};

// A call that got no answer within its timeout: the callee may still be alive, only slow.
class RpcTimeout : public RpcError {
 public:
  using RpcError::RpcError;
};

}  // namespace ddpscope::rpc
