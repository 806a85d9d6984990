// The shared-memory transport (transport.h): workers on one host exchange messages through
// a ring of memory both map (shm_ring.h), one per ordered pair; workers on other hosts
// through the TCP transport it holds (tcp_transport.h). A message to a worker of this
// host is one copy into the ring and one out, with no system call when the reader is
// awake: the reader's poll() spins on its rings for a bounded time before it sleeps, and
// a writer wakes a sleeping reader through an eventfd.
//
// Each worker listens on an abstract Unix socket as well as on TCP. A worker connects to
// the socket of every worker of this host (the same boot and network namespace:
// shm_handshake.h); with its first message to one, it passes the ring's sealed memory file
// and two eventfds (the reader's wake-up, and its own for room in the ring). The socket
// carries nothing else: its closing says the other worker is gone, as a TCP connection's
// would. So a host's workers hold rings (1 MiB each) for the pairs that talk only.
// Between hosts, or where the socket cannot be reached, the message goes by TCP.
//
// Endpoint: "ddpshm://HOSTKEY/SOCKET,ddptcp://HOST:PORT".
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "ddpscope/unique_fd.h"
#include "epoll_set.h"
#include "send_queue.h"
#include "shm_handshake.h"
#include "shm_ring.h"
#include "tcp_transport.h"
#include "transport.h"

namespace ddpscope::rpc {

class ShmTransport final : public Transport {
 public:
  static constexpr size_t kDefaultRingBytes = size_t{1} << 20;

  // Listens on `address` (TCP, for other hosts) and on an abstract Unix socket; throws
  // Error naming what it could not open.
  ShmTransport(const std::string& address, int64_t max_frame_bytes, size_t ring_bytes = kDefaultRingBytes);
  ~ShmTransport() override;

  std::string endpoint() const override { return endpoint_; }
  void expect_token(const std::string& token) override { tcp_.expect_token(token); }
  void connect(const std::vector<std::string>& endpoints) override;
  void send(int32_t dst, std::vector<OutgoingFrame> frames) override;
  void poll(std::chrono::milliseconds wait, TransportEvents& events) override;
  void close() override;

  // Whether messages to worker `peer` go through shared memory (decided by connect()).
  bool shares_memory_with(int32_t peer) const;

  static constexpr const char* kScheme = "ddpshm://";

 private:
  struct Peer {  // a worker of this host, and the ring this worker writes to it
    std::mutex mutex;
    UniqueFd socket;  // closes when the worker goes
    UniqueFd wake;    // the reader's eventfd
    UniqueFd room;    // this side's: the reader signals room
    shm::Region region;
    std::unique_ptr<ShmRing> ring;  // made with the first message
    SendQueue queue;                // what the ring had no room for yet
    bool lost = false;
    PeerNews news;  // its state as told to the agent
  };
  struct Inbound;  // a worker of this host that writes to this one (shm_transport.cpp)

  std::unique_ptr<Peer> open_local(const std::string& socket_name);
  bool start_ring(int32_t id, Peer& peer);
  void write_locked(Peer& peer, std::span<iovec> pieces);
  void flush_locked(Peer& peer);
  void flush(int32_t id);
  void lose(Peer& peer);  // its mutex held; said at the next poll()
  void report_peers(TransportEvents& events);
  // Reads every ring with bytes; true when any had some.
  bool read_rings(TransportEvents& events);
  bool spin(TransportEvents& events);
  void handle(uint64_t what, TransportEvents& events);
  void accept_all();
  void on_inbound_socket(Inbound& in, TransportEvents& events);
  void read_ring(Inbound& in, TransportEvents& events);
  void drop(Inbound& in);

  TcpTransport tcp_;  // the workers of other hosts
  std::string host_key_;
  UniqueFd listen_fd_;
  EpollSet epoll_;
  size_t ring_bytes_;
  int64_t max_frame_bytes_;
  std::string endpoint_;
  std::vector<std::unique_ptr<Peer>> peers_;       // null: reached by TCP
  std::vector<std::unique_ptr<Inbound>> inbound_;  // poll()'s thread only
  std::atomic<bool> closed_{false};
};

}  // namespace ddpscope::rpc
