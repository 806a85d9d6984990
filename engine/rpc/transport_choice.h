// Which transport an RPC agent opens: "shm" (shared memory with the workers of this host,
// TCP with the others, routed_transport.h), "tcp" (TCP with everyone: tcp_transport.h) or
// "zmq" (ZeroMQ, zmq_transport.h). The choice is RpcBackendOptions::transport, else
// $DDPSCOPE_RPC_TRANSPORT, else shm; every worker of a job must make the same one.
#pragma once

#include <memory>
#include <string>

#include "transport.h"

namespace ddpscope::rpc {

// The transport chosen by `requested` (empty: $DDPSCOPE_RPC_TRANSPORT, else "shm");
// throws Error naming the choices for another name.
std::string transport_kind(const std::string& requested);

// A transport of `kind` listening on `address`; throws Error when it cannot listen.
std::unique_ptr<Transport> open_transport(const std::string& kind, const std::string& address, int64_t max_frame_bytes);

// The "HOST:PORT" that other hosts reach an endpoint of any transport by: what follows its
// last "://" ("tcp://H:P", "ddptcp://H:P", "ddpshm://KEY/SOCKET,ddptcp://H:P").
std::string endpoint_host_port(const std::string& endpoint);

}  // namespace ddpscope::rpc
