// The TCP transport (transport.h): plain sockets and epoll, no I/O thread between the
// agent and the kernel. ZeroMQ hands every message to its own I/O thread on both ends,
// two thread wake-ups per direction that cost most of an RPC round trip here.
//
// Each worker listens on one address and opens one connection to every worker (itself
// included) for what it sends; what it receives comes in on the connections the others
// opened to it. A send writes the message from the calling thread with one writev (the
// frames' own bytes: a tensor is not copied); only when the kernel's buffer is full does
// the rest wait in the connection's queue, which poll() writes out as room comes. So a
// send never blocks on a peer that is not reading, and messages to one peer keep their
// order. A connection that breaks reports its peer lost; it is not reopened.
//
// On the wire a message is: u32 n (frames), n x u64 frame sizes, then the frames' bytes,
// all little-endian (WIRE.md, "The TCP transport"; stream_framing.h reads it back).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "ddpscope/unique_fd.h"
#include "epoll_set.h"
#include "stream_peers.h"
#include "transport.h"

namespace ddpscope::rpc {

class TcpTransport final : public Transport {
 public:
  // Listens on an ephemeral port of `address`; throws Error naming the address when it cannot.
  TcpTransport(const std::string& address, int64_t max_frame_bytes);
  ~TcpTransport() override;

  // "ddptcp://HOST:PORT": not ZeroMQ's tcp://, so that workers of two transports refuse
  // each other's endpoints instead of exchanging garbage.
  std::string endpoint() const override { return endpoint_; }
  void expect_token(const std::string& token) override { token_ = token; }
  // With a token, a worker greets each connection it opens with it at once (connect()): an
  // inbound connection that has not shown it within this limit is a stranger's and is
  // dropped (counted as without the token), and so is the oldest of more than 64 waiting.
  static constexpr std::chrono::milliseconds kUnverifiedLimit{10000};
  void set_unverified_limit(std::chrono::milliseconds limit) { unverified_limit_ = limit; }  // tests shorten it
  // An empty endpoint: a worker this transport does not serve (another reaches it); it is
  // neither connected to nor reported.
  void connect(const std::vector<std::string>& endpoints) override;
  void send(int32_t dst, std::vector<OutgoingFrame> frames) override;
  void poll(std::chrono::milliseconds wait, TransportEvents& events) override;
  void close() override;
  bool accepts(const std::string& endpoint) const override { return endpoint.rfind(kScheme, 0) == 0; }
  bool serves(int32_t peer) const override { return peers_.serves(peer); }
  int wait_fd() const override { return epoll_.fd(); }  // the epoll set poll() waits on

  static constexpr const char* kScheme = "ddptcp://";

 private:
  struct Peer : StreamPeer {  // the connection this worker sends to a worker on
    UniqueFd fd;
  };
  struct Inbound;  // a connection a worker opened to this one (tcp_transport.cpp)

  void accept_all(TransportEvents& events);
  void make_room_for_stranger(TransportEvents& events);
  void drop_strangers(TransportEvents& events);
  void refuse_stranger(Inbound& in, TransportEvents& events);
  // Reads what `in` has (a bounded number of reads), delivers its whole messages, and
  // drops it when it closed or sent what is not this framing.
  void read_inbound(Inbound& in, TransportEvents& events);
  void wait_for_more(Inbound& in);
  void flush(int32_t peer);  // poll()'s thread: the queue, as far as the kernel takes it
  void lose(int32_t peer);
  void drop(Inbound& in);

  UniqueFd listen_fd_;
  EpollSet epoll_;
  int64_t max_frame_bytes_;
  std::string token_;  // set before connect(); every inbound connection's reader checks it
  std::string endpoint_;
  StreamPeers<Peer> peers_;
  std::vector<std::unique_ptr<Inbound>> inbound_;  // poll()'s thread only
  std::chrono::milliseconds unverified_limit_ = kUnverifiedLimit;
  std::chrono::steady_clock::time_point next_sweep_{};  // drop_strangers()'
  std::atomic<bool> closed_{false};
};

}  // namespace ddpscope::rpc
