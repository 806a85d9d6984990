#include "transport_choice.h"

#include <cstdlib>

#include "ddpscope/error.h"
#include "routed_transport.h"
#include "shm_transport.h"
#include "tcp_transport.h"
#include "zmq_transport.h"

namespace ddpscope::rpc {

std::string transport_kind(const std::string& requested) {
  std::string kind = requested;
  if (kind.empty()) {
    const char* env = std::getenv("DDPSCOPE_RPC_TRANSPORT");
    kind = env && *env ? env : "shm";
  }
  DDPSCOPE_CHECK(kind == "zmq" || kind == "tcp" || kind == "shm", "unknown RPC transport '", kind,
                 "' (DDPSCOPE_RPC_TRANSPORT): use shm, tcp or zmq");
  return kind;
}

std::unique_ptr<Transport> open_transport(const std::string& kind, const std::string& address,
                                          int64_t max_frame_bytes) {
  if (kind == "shm") {  // shared memory within this host, TCP beyond it
    std::vector<std::unique_ptr<Transport>> routes;
    routes.push_back(std::make_unique<ShmTransport>(max_frame_bytes));
    routes.push_back(std::make_unique<TcpTransport>(address, max_frame_bytes));
    return std::make_unique<RoutedTransport>(std::move(routes));
  }
  if (kind == "tcp") return std::make_unique<TcpTransport>(address, max_frame_bytes);
  return std::make_unique<ZmqTransport>(address, max_frame_bytes);
}

std::string endpoint_host_port(const std::string& endpoint) {
  const size_t scheme = endpoint.rfind("://");
  return scheme == std::string::npos ? endpoint : endpoint.substr(scheme + 3);
}

}  // namespace ddpscope::rpc
