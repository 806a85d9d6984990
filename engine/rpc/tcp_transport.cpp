#include "tcp_transport.h"

#include "stream_framing.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

#include "ddpscope/error.h"
#include "ddpscope/host_port.h"
#include "ddpscope/log.h"
#include "probe.h"

namespace ddpscope::rpc {
namespace {

constexpr uint32_t kMaxFrames = kMaxFramesPerMessage;
constexpr int kReadsPerPoll = 64;  // then the agent gets to look at its timers
constexpr int kConnectTimeoutMs = 10000;
constexpr size_t kLowWaterMax = 256 * 1024;  // at most half the smallest receive buffer a peer may have
// A worker greets each connection it opens with the token at once (connect()), so one that
// has not shown it this long after it was accepted is a stranger's, and so is the oldest
// of more than kMaxUnverified such: they cost a descriptor and the reader's small state.
constexpr size_t kMaxUnverified = 64;
// What a descriptor in the epoll set is (epoll_set.h).
enum FdKind : uint8_t { kListener, kOutgoing, kInbound };

// "HOST:PORT" or "[IPv6]:PORT" -> its addresses; throws naming `what` when it cannot.
addrinfo* resolve(const std::string& host, const std::string& port, bool passive, const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  DDPSCOPE_CHECK(rc == 0 && found, what, ": cannot resolve '", host, "': ", ::gai_strerror(rc));
  return found;
}

// An endpoint's "HOST:PORT" ("[IPV6]:PORT"), as host_port.h reads it; no port: any.
std::pair<std::string, std::string> endpoint_host_and_port(const std::string& hostport) {
  HostPort where;
  split_host_port(hostport, where);
  return {where.host, where.port.empty() ? "0" : where.port};
}

// Small messages go out at once (Nagle's delay would add up to 40 ms a round trip). A socket
// that refuses it still works, slower: said once, not fatal.
void set_nodelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0) return;
  static std::once_flag said;
  std::call_once(
      said, [] { log::warn("RPC over TCP: TCP_NODELAY refused ({}); small messages may wait", std::strerror(errno)); });
}

// Writes what it can of `iov` without blocking: the bytes written, or -1 when the
// connection broke (errno says why). `iov` is left holding what was not written.
ssize_t write_some(int fd, std::span<iovec> iov) {
  size_t total = 0;
  size_t first = 0;
  while (first < iov.size()) {
    msghdr m{};
    m.msg_iov = iov.data() + first;
    m.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    const ssize_t n = ::sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return -1;
    }
    total += static_cast<size_t>(n);
    // Past what was written: whole entries skipped, a partial one advanced.
    size_t left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      iov[first++].iov_len = 0;  // written: the caller queues only what is left
    }
    if (first < iov.size() && left > 0) {
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
      break;  // the kernel's buffer is full
    }
  }
  return static_cast<ssize_t>(total);
}

}  // namespace

// A connection another worker opened to this one: what it sends arrives here, turned back
// into messages by its reader.
struct TcpTransport::Inbound {
  UniqueFd fd;
  FrameReader reader;
  int low_water = 1;  // SO_RCVLOWAT: the bytes epoll waits for before it wakes poll()
  std::chrono::steady_clock::time_point accepted = std::chrono::steady_clock::now();
  Inbound(UniqueFd fd, int64_t max_frame_bytes)
      : fd(std::move(fd)), reader(max_frame_bytes, [] { return probes::enabled() ? probes::now_ticks() : 0; }) {}
};

TcpTransport::TcpTransport(const std::string& address, int64_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {
  const std::string what = "cannot listen on " + address;
  addrinfo* found = resolve(address, "0", true, what);
  std::string error = "no usable address";
  for (addrinfo* a = found; a && !listen_fd_.valid(); a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) continue;
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), 128) == 0)
      listen_fd_ = std::move(fd);
    else
      error = std::strerror(errno);
  }
  ::freeaddrinfo(found);
  DDPSCOPE_CHECK(listen_fd_.valid(), what, ": ", error, " (set DDPSCOPE_RPC_ADDRESS to an address of this host)");
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  DDPSCOPE_CHECK(::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&bound), &length) == 0, what,
                 ": cannot read the port it was given: ", std::strerror(errno));
  const int port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const bool v6 = address.find(':') != std::string::npos;
  endpoint_ = std::string(kScheme) + (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
  DDPSCOPE_CHECK(epoll_.add(listen_fd_.get(), EPOLLIN, {kListener}), what,
                 ": cannot watch its socket: ", std::strerror(errno));
}

TcpTransport::~TcpTransport() { close(); }

void TcpTransport::connect(const std::vector<std::string>& endpoints) {
  for (size_t r = 0; r < endpoints.size(); ++r) {
    const std::string& e = endpoints[r];
    if (e.empty()) {  // reached another way
      peers_.add(nullptr);
      continue;
    }
    auto peer = std::make_unique<Peer>();
    DDPSCOPE_CHECK(e.rfind(kScheme, 0) == 0, "init_rpc: worker ", r, " listens on '", e,
                   "', another RPC transport's endpoint; give every worker the same DDPSCOPE_RPC_TRANSPORT");
    const auto [host, port] = endpoint_host_and_port(e.substr(std::strlen(kScheme)));
    addrinfo* found = resolve(host, port, false, "init_rpc: worker " + std::to_string(r));
    for (addrinfo* a = found; a && !peer->fd.valid(); a = a->ai_next) {
      UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
      if (!fd.valid()) continue;
      bool up = ::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0;
      if (!up && errno == EINPROGRESS) {  // wait for it, as long as a slow network may take
        pollfd p{fd.get(), POLLOUT, 0};
        int error = 0;
        socklen_t length = sizeof(error);
        up = ::poll(&p, 1, kConnectTimeoutMs) == 1 &&
             ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
      }
      if (up) {
        set_nodelay(fd.get());
        peer->fd = std::move(fd);
      }
    }
    ::freeaddrinfo(found);
    // The peer never writes on it: readable means closed. One that cannot be watched would
    // never be seen to close: it is lost at once.
    if (!peer->fd.valid() || !epoll_.add(peer->fd.get(), EPOLLIN | EPOLLRDHUP, {kOutgoing, r})) {
      peer->fd.reset();
      peer->lost = true;  // said at the first poll, as a connection that broke
    }
    peers_.add(std::move(peer));
  }
  // The greeting: a message of the token alone, which the receiver checks and drops.
  if (!token_.empty())
    for (size_t r = 0; r < peers_.size(); ++r)
      if (const Peer* peer = peers_.find(static_cast<int32_t>(r)); peer && !peer->lost)
        send(static_cast<int32_t>(r), {{token_.data(), token_.size(), {}}});
}

void TcpTransport::send(int32_t dst, std::vector<OutgoingFrame> frames) {
  DDPSCOPE_CHECK(!closed_.load(), "the RPC transport is closed");
  DDPSCOPE_CHECK(peers_.serves(dst), "the TCP transport does not serve worker ", dst, " (it is reached another way)");
  Peer& peer = *peers_.find(dst);
  DDPSCOPE_CHECK(frames.size() <= kMaxFrames, "an RPC message of ", frames.size(), " frames (at most ", kMaxFrames,
                 ")");
  MessagePieces message(frames);
  const std::span<iovec> pieces = message.pieces();
  std::lock_guard<std::mutex> lock(peer.mutex);
  if (peer.lost) return;  // as a queue to a peer that is gone: the agent fails its calls
  const bool queued = !peer.queue.empty();
  if (!queued && write_some(peer.fd.get(), pieces) < 0) {
    lose(dst);
    return;
  }
  peer.queue.keep(pieces, frames);
  // poll() writes the rest as the kernel takes it; a connection it cannot be told of would
  // keep the rest for ever: lost.
  if (!queued && !peer.queue.empty() &&
      !epoll_.modify(peer.fd.get(), EPOLLIN | EPOLLRDHUP | EPOLLOUT, {kOutgoing, static_cast<uint64_t>(dst)}))
    lose(dst);
}

void TcpTransport::flush(int32_t id) {
  Peer& peer = *peers_.find(id);
  std::lock_guard<std::mutex> lock(peer.mutex);
  if (peer.lost) return;
  if (!peer.queue.flush([&peer](std::span<iovec> pieces) { return write_some(peer.fd.get(), pieces); }))
    return lose(id);
  if (!peer.queue.empty()) return;  // full again: the next EPOLLOUT goes on
  if (!epoll_.modify(peer.fd.get(), EPOLLIN | EPOLLRDHUP, {kOutgoing, static_cast<uint64_t>(id)})) lose(id);
}

// The peer's mutex is held. Said to the agent at the next poll().
void TcpTransport::lose(int32_t id) {
  Peer& peer = *peers_.find(id);
  if (peer.lost) return;
  peer.lost = true;
  peer.queue.clear();
  if (peer.fd.valid()) epoll_.remove_before_close(peer.fd.get());
  peer.fd.reset();
}

void TcpTransport::poll(std::chrono::milliseconds wait, TransportEvents& events) {
  peers_.report(events);  // what happened outside poll() first
  epoll_.dispatch(wait, [&](EpollTag tag, uint32_t ready) {
    const uint64_t index = tag.index;
    if (tag.kind == kListener) {
      accept_all(events);
    } else if (tag.kind == kInbound) {
      if (index < inbound_.size() && inbound_[index]) read_inbound(*inbound_[index], events);
    } else if (ready & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      Peer& peer = *peers_.find(static_cast<int32_t>(index));
      std::lock_guard<std::mutex> lock(peer.mutex);
      lose(static_cast<int32_t>(index));  // an outgoing connection is never written to: it closed
    } else if (ready & EPOLLOUT) {
      flush(static_cast<int32_t>(index));
    }
  });
  drop_strangers(events);
}

// Connections that have not shown the token within the limit, looked at once a second. Each is read once more first:
// its greeting may have just come.
void TcpTransport::drop_strangers(TransportEvents& events) {
  const auto now = std::chrono::steady_clock::now();
  if (token_.empty() || now < next_sweep_) return;
  next_sweep_ = now + std::min<std::chrono::milliseconds>(std::chrono::seconds(1), unverified_limit_ / 2);
  for (auto& slot : inbound_) {
    if (!slot || slot->reader.verified() || now - slot->accepted < unverified_limit_) continue;
    Inbound& in = *slot;
    read_inbound(in, events);
    if (slot && !slot->reader.verified()) refuse_stranger(in, events);
  }
}

void TcpTransport::refuse_stranger(Inbound& in, TransportEvents& events) {
  events.on_rejected(wire::Rejection::Token,
                     detail::concat("a connection that showed no token in ", unverified_limit_.count(),
                                    " ms (a worker's greets with it at once)"));
  drop(in);
}

// At most kMaxUnverified connections wait for their token: past that the oldest goes, so
// strangers that hold connections open cannot keep a worker's greeting out.
void TcpTransport::make_room_for_stranger(TransportEvents& events) {
  if (token_.empty()) return;
  Inbound* oldest = nullptr;
  size_t waiting = 0;
  for (auto& slot : inbound_)
    if (slot && !slot->reader.verified()) {
      ++waiting;
      if (!oldest || slot->accepted < oldest->accepted) oldest = slot.get();
    }
  if (waiting >= kMaxUnverified) refuse_stranger(*oldest, events);
}

void TcpTransport::accept_all(TransportEvents& events) {
  for (;;) {
    UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;
    set_nodelay(fd.get());
    auto in = std::make_unique<Inbound>(std::move(fd), max_frame_bytes_);
    in->reader.expect_token(token_);
    make_room_for_stranger(events);
    size_t slot = 0;
    while (slot < inbound_.size() && inbound_[slot])
      ++slot;
    if (slot == inbound_.size()) inbound_.emplace_back();
    // One that cannot be watched would never be read: closed now (its sender sees it close).
    if (epoll_.add(in->fd.get(), EPOLLIN | EPOLLRDHUP, {kInbound, slot})) inbound_[slot] = std::move(in);
  }
}

void TcpTransport::read_inbound(Inbound& in, TransportEvents& events) {
  const auto deliver = [this, &events](IncomingMessage m) {
    // With a token, a message of one frame is a greeting (a real one has a header too).
    if (token_.empty() || m.frames.size() > 1) events.on_message(std::move(m));
  };
  std::string why;
  for (int reads = 0; reads < kReadsPerPoll; ++reads) {
    const auto [where, room] = in.reader.space();
    const ssize_t got = ::read(in.fd.get(), where, room);
    if (got > 0) {
      if (in.reader.received(static_cast<size_t>(got), deliver, &why)) continue;
      // Not this job's traffic (no token), or not this transport's (its framing).
      events.on_rejected(in.reader.refused_token() ? wire::Rejection::Token : wire::Rejection::Malformed, why);
      return drop(in);
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wait_for_more(in);
    return drop(in);  // the other end closed (or broke) it: what it sent whole was delivered
  }
}

// A large message arrives in segments (64 KiB on loopback), and waking poll() for each
// costs a context switch: 5x ZeroMQ's for a 1 MiB echo. Until its body is whole, the
// kernel wakes us only once a good part of what is left has come (SO_RCVLOWAT, which epoll
// honours); between messages, at the first byte.
void TcpTransport::wait_for_more(Inbound& in) {
  const int want = static_cast<int>(std::clamp<size_t>(in.reader.body_left(), 1, kLowWaterMax));
  if (want == in.low_water) return;
  // Refused, epoll wakes poll() at every segment as before, and the next read tries again.
  if (::setsockopt(in.fd.get(), SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want)) == 0) in.low_water = want;
}

void TcpTransport::drop(Inbound& in) {
  epoll_.remove_before_close(in.fd.get());
  for (auto& slot : inbound_)  // its descriptor closes with it
    if (slot.get() == &in) slot.reset();
}

void TcpTransport::close() {
  if (closed_.exchange(true)) return;
  peers_.close_all([](Peer& p) { p.fd.reset(); });
  inbound_.clear();  // their descriptors close with them
  listen_fd_.reset();
  epoll_.close();
}

}  // namespace ddpscope::rpc
