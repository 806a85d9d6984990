// Start-up of a job's RPC: the workers agree, over the process group, on where each
// listens, what each is called and the token, and each opens the transport
// DDPSCOPE_RPC_TRANSPORT chooses (transport_choice.h: shared memory and TCP by default).
#pragma once

#include <memory>
#include <string>

#include "c10d/process_group.h"
#include "rpc_options.h"
#include "transport.h"

namespace ddpscope::rpc {

struct Bootstrap {
  WorkerSetup setup;
  std::unique_ptr<Transport> transport;  // listening, not yet connected
};

// Collective over `group`: every rank calls it together. A rank that cannot listen
// still takes part, so every rank learns of the failure and none waits forever; each
// then throws an error naming that rank. Names must be unique.
Bootstrap bootstrap_over_group(c10d::ProcessGroup& group, const std::string& requested_name,
                               const RpcBackendOptions& options);

}  // namespace ddpscope::rpc
