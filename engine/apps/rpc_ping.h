// rpc-ping: a ping-pong job that checks a cluster's RPC path. Worker 0 sends small
// tensors to every other worker (round-trip latency) and then `bytes`-sized tensors
// (echo throughput); the other workers serve. Run by `ddpscope-cli rpc-ping --np N`,
// which starts `ddpscope-worker rpc-ping ...` on every rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddpscope::apps {

struct RpcPingOptions {
  int64_t bytes = 1 << 20;  // the throughput tensor's size
  int64_t calls = 1000;     // small round trips per peer
  int64_t echo_bytes = 0;   // >0: the round trips echo a tensor of this many bytes (0: a 3x3 add)
  bool json = false;
};

// The worker's arguments after "rpc-ping".
std::vector<std::string> rpc_ping_arguments(const RpcPingOptions& o);
// One rank's part of the job (under mpirun); returns the exit code.
int rpc_ping_worker(int argc, char** argv);

}  // namespace ddpscope::apps
