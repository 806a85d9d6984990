// Which transport an RPC agent opens: "zmq" (ZeroMQ, zmq_transport.h) or "tcp" (sockets
// and epoll, tcp_transport.h). The choice is RpcBackendOptions::transport, else
// $DDPSCOPE_RPC_TRANSPORT, else zmq; every worker of a job must make the same one.
#pragma once

#include <memory>
#include <string>

#include "transport.h"

namespace ddpscope::rpc {

// The transport chosen by `requested` (empty: $DDPSCOPE_RPC_TRANSPORT, else "zmq");
// throws Error naming the choices for another name.
std::string transport_kind(const std::string& requested);

// A transport of `kind` listening on `address`; throws Error when it cannot listen.
std::unique_ptr<Transport> open_transport(const std::string& kind, const std::string& address, int64_t max_frame_bytes);

}  // namespace ddpscope::rpc
