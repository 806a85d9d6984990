// The shared-memory transport (transport.h), for the workers of this host only: they
// exchange messages through a ring of memory both map (shm_ring.h), one per ordered pair.
// A message is one copy into the ring and one out, with no system call when the reader is
// awake: the reader's poll() spins on its rings for a bounded time before it sleeps, and a
// writer wakes a sleeping reader through an eventfd. Workers of other hosts, or whose
// socket cannot be reached, are another transport's (routed_transport.h puts TCP beside it).
//
// Each worker listens on an abstract Unix socket. A worker connects to the socket of every
// worker of its domain (the same boot and network namespace: shm_handshake.h); with its
// first message to one, it passes the ring's sealed memory file and two eventfds (the
// reader's wake-up, and its own for room in the ring). The socket carries nothing else:
// its closing says the other worker is gone, as a TCP connection's would. So a host's
// workers hold rings (1 MiB each) for the pairs that talk only.
//
// Endpoint: "ddpshm://DOMAINKEY/SOCKET".
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "ddpscope/unique_fd.h"
#include "epoll_set.h"
#include "shm_handshake.h"
#include "shm_ring.h"
#include "stream_peers.h"
#include "transport.h"

namespace ddpscope::rpc {

class ShmTransport final : public Transport {
 public:
  static constexpr size_t kDefaultRingBytes = size_t{1} << 20;

  // Listens on an abstract Unix socket; throws Error naming what it could not open. Its
  // rings are shared with this user's processes only, so it needs no token.
  explicit ShmTransport(int64_t max_frame_bytes, size_t ring_bytes = kDefaultRingBytes);
  ~ShmTransport() override;

  std::string endpoint() const override { return endpoint_; }
  // An empty endpoint, or one of another domain (host): a worker it does not serve. One
  // whose socket cannot be reached is not served either (serves() says so after).
  void connect(const std::vector<std::string>& endpoints) override;
  void send(int32_t dst, std::vector<OutgoingFrame> frames) override;
  void poll(std::chrono::milliseconds wait, TransportEvents& events) override;
  void close() override;
  // This domain's endpoints: workers it can share memory with.
  bool accepts(const std::string& endpoint) const override;
  bool serves(int32_t peer) const override { return peers_.serves(peer); }
  int wait_fd() const override { return epoll_.fd(); }
  bool going_to_sleep() override;
  void awake() override;
  void look(TransportEvents& events) override;
  void on_ready(TransportEvents& events) override;

  // The domain this worker shares memory in: its host's boot and network namespace
  // (shm_handshake.h); empty where it cannot be known (then it serves no one).
  const std::string& domain_key() const { return host_key_; }

  static constexpr const char* kScheme = "ddpshm://";

 private:
  struct Peer : StreamPeer {  // a worker of this host, and the ring this worker writes to it
    UniqueFd socket;          // closes when the worker goes
    UniqueFd wake;            // the reader's eventfd
    UniqueFd room;            // this side's: the reader signals room
    shm::Region region;
    std::unique_ptr<ShmRing> ring;  // made with the first message
  };
  struct Inbound;  // a worker of this host that writes to this one (shm_transport.cpp)

  std::unique_ptr<Peer> open_local(const std::string& socket_name);
  bool start_ring(int32_t id, Peer& peer);
  void write_locked(Peer& peer, std::span<iovec> pieces);
  void flush_locked(Peer& peer);
  void flush(int32_t id);
  void lose(Peer& peer);  // its mutex held; said at the next poll()
  // Reads every ring with bytes; true when any had some.
  bool read_rings(TransportEvents& events);
  // read_rings, and the descriptors too when they were last looked at a while ago.
  bool read_rings_and_due_fds(TransportEvents& events);
  bool spin(TransportEvents& events);
  void handle(EpollTag tag, TransportEvents& events);
  int handle_ready(TransportEvents& events);  // the descriptors ready now, without waiting
  void accept_all();
  void on_inbound_socket(Inbound& in, TransportEvents& events);
  void read_ring(Inbound& in, TransportEvents& events);
  void drop(Inbound& in);

  std::string host_key_;
  UniqueFd listen_fd_;
  EpollSet epoll_;
  size_t ring_bytes_;
  int64_t max_frame_bytes_;
  std::string endpoint_;
  StreamPeers<Peer> peers_;
  std::vector<std::unique_ptr<Inbound>> inbound_;          // poll()'s thread only
  std::chrono::steady_clock::time_point fds_looked_at_{};  // poll()'s thread only
  std::atomic<bool> closed_{false};
};

}  // namespace ddpscope::rpc
