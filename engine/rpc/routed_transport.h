// Several transports behind one: each worker is reached by the first transport in the list
// that serves it, as TensorPipe picks a transport per peer by its domain. The default
// (transport_choice.h) is shared memory for the workers of this host, TCP for the rest and
// for a worker whose socket cannot be reached.
//
// A worker's endpoint is the list of its transports' endpoints, in order; it travels as one
// string, joined by ',' ("ddpshm://KEY/SOCKET,ddptcp://HOST:PORT"), which connect() splits
// again. One poll() waits on every transport at once: each is looked at without waiting
// (shared memory spins a little there for a reply on its way), then the agent's thread
// sleeps on all their descriptors in one epoll set until one has something to do.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "epoll_set.h"
#include "transport.h"

namespace ddpscope::rpc {

class RoutedTransport final : public Transport {
 public:
  // `transports`, most preferred first; each already listening.
  explicit RoutedTransport(std::vector<std::unique_ptr<Transport>> transports);
  ~RoutedTransport() override;

  std::string endpoint() const override;
  void expect_token(const std::string& token) override;
  // Throws Error naming a worker none of the transports can reach (another transport's
  // endpoint: the workers chose different DDPSCOPE_RPC_TRANSPORTs).
  void connect(const std::vector<std::string>& endpoints) override;
  void send(int32_t dst, std::vector<OutgoingFrame> frames) override;
  void poll(std::chrono::milliseconds wait, TransportEvents& events) override;
  void close() override;
  bool serves(int32_t peer) const override { return route_of(peer) != nullptr; }

  // The transport worker `peer` is reached by (connect() chose it); null before, or for no worker.
  Transport* route_of(int32_t peer) const;

  // One worker's endpoints, and the string they travel as.
  static std::vector<std::string> split_endpoints(const std::string& joined);
  static std::string join_endpoints(const std::vector<std::string>& endpoints);

 private:
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<int> route_;  // by worker: its transport's index
  EpollSet epoll_;          // every transport's wait_fd(), tagged with its index
};

}  // namespace ddpscope::rpc
