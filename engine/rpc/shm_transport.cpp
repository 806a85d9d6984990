#include "shm_transport.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <random>

#include "ddpscope/error.h"
#include "probe.h"
#include "stream_framing.h"

namespace ddpscope::rpc {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMaxFrames = kMaxFramesPerMessage;
constexpr int kReadsPerPoll = 64;  // then the agent gets to look at its timers
// How long poll() spins on its rings before it sleeps: about a round trip's worth, so a
// reply that is on its way is taken without a wake-up (2 context switches).
constexpr auto kSpin = std::chrono::microseconds(60);
// How long a send of more than the ring holds waits for the reader to make room before it
// leaves the rest to poll(): only while the reader is taking bytes does it go on.
constexpr auto kSendSpin = std::chrono::microseconds(40);
// While the rings hold bytes poll() makes no system call, but it looks at its descriptors at
// least this often: under a steady stream the rings always hold bytes, and the room a reader
// made for the rest of a large message (or a new worker's hello) waited as long as it went on.
constexpr auto kFdsEvery = std::chrono::microseconds(500);
// A worker's ring is ShmTransport::kDefaultRingBytes (1 MiB); a hello's larger one is
// refused, and so is a connection beyond kMaxInbound: three hostile 1 GiB rings, populated
// on arrival, took a worker from 178 to 3,253 MB.
constexpr size_t kMaxRegionBytes = size_t{64} << 20;
constexpr size_t kMaxInbound = 4096;
const std::string kHello = "ddpscope-shm-ring-1";
// epoll's data: what an fd is, in the top byte, and its index.
enum FdKind : uint8_t { kListener, kOutgoing, kRoom, kInbound, kWake };

void signal(int eventfd) {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(eventfd, &one, sizeof(one));  // full only after 2^64 - 1 wake-ups
}

void drain(int eventfd) {
  uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(eventfd, &count, sizeof(count));
}

// A spin-wait's pause: tells the core it spins, so that its sibling thread runs meanwhile.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);  // no pause instruction: a compiler barrier
#endif
}

sockaddr_un abstract_address(const std::string& name, socklen_t& length) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(a.sun_path) - 1);
  std::memcpy(a.sun_path + 1, name.data(), n);  // sun_path[0] = 0: the abstract namespace
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return a;
}

}  // namespace

// A worker of this host that writes to this one: its socket, then (after its hello) its ring.
struct ShmTransport::Inbound {
  UniqueFd socket;
  UniqueFd wake;  // this side sleeps on it
  UniqueFd room;  // the writer's: signalled when this side made room it waits for
  size_t slot = 0;
  shm::Region region;
  std::unique_ptr<ShmRing> ring;
  FrameReader reader;
  Inbound(UniqueFd socket, size_t slot, int64_t max_frame_bytes)
      : socket(std::move(socket)),
        slot(slot),
        reader(max_frame_bytes, [] { return probes::enabled() ? probes::now_ticks() : 0; }) {}
};

ShmTransport::ShmTransport(int64_t max_frame_bytes, size_t ring_bytes)
    : host_key_(shm::host_key()), ring_bytes_(ring_bytes), max_frame_bytes_(max_frame_bytes) {
  std::random_device random;
  const std::string name = "ddpscope-rpc-" + std::to_string(::getpid()) + "-" + std::to_string(random());
  listen_fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  socklen_t length = 0;
  const sockaddr_un where = abstract_address(name, length);
  DDPSCOPE_CHECK(listen_fd_.valid() &&
                     ::bind(listen_fd_.get(), reinterpret_cast<const sockaddr*>(&where), length) == 0 &&
                     ::listen(listen_fd_.get(), SOMAXCONN) == 0,
                 "the shared-memory RPC transport cannot listen on a Unix socket: ", std::strerror(errno),
                 " (DDPSCOPE_RPC_TRANSPORT=tcp avoids it)");
  DDPSCOPE_CHECK(epoll_.add(listen_fd_.get(), EPOLLIN, {kListener}),
                 "the shared-memory RPC transport cannot watch its socket: ", std::strerror(errno));
  endpoint_ = std::string(kScheme) + host_key_ + "/" + name;
}

ShmTransport::~ShmTransport() { close(); }

bool ShmTransport::accepts(const std::string& endpoint) const {
  const size_t key_at = std::strlen(kScheme);
  return !host_key_.empty() && endpoint.rfind(kScheme, 0) == 0 &&
         endpoint.compare(key_at, host_key_.size(), host_key_) == 0 && endpoint.size() > key_at + host_key_.size() &&
         endpoint[key_at + host_key_.size()] == '/';
}

void ShmTransport::connect(const std::vector<std::string>& endpoints) {
  for (size_t r = 0; r < endpoints.size(); ++r) {
    const std::string& e = endpoints[r];
    DDPSCOPE_CHECK(e.empty() || e.rfind(kScheme, 0) == 0, "init_rpc: worker ", r, " listens on '", e,
                   "', another RPC transport's endpoint; give every worker the same DDPSCOPE_RPC_TRANSPORT");
    // Another domain's (host's) worker, or one whose socket is out of reach: not served.
    peers_.add(accepts(e) ? open_local(e.substr(e.find('/', std::strlen(kScheme)) + 1)) : nullptr);
  }
}

// Connects to a worker's socket; null when it cannot be reached (then TCP carries the
// messages). The ring comes with the first message (start_ring): memory for the pairs
// that talk, not for every pair of a host's workers.
std::unique_ptr<ShmTransport::Peer> ShmTransport::open_local(const std::string& socket_name) {
  auto peer = std::make_unique<Peer>();
  // Non-blocking: a worker whose backlog is full (every worker connects while none accepts
  // yet) refuses at once (EAGAIN) and is sent to by TCP, instead of all waiting on each other.
  peer->socket.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  socklen_t length = 0;
  const sockaddr_un where = abstract_address(socket_name, length);
  // It never carries data back: readable means the worker closed it. One that cannot be
  // watched would never be seen to close: TCP carries that worker's messages instead.
  if (!peer->socket.valid() || ::connect(peer->socket.get(), reinterpret_cast<const sockaddr*>(&where), length) != 0 ||
      !epoll_.add(peer->socket.get(), EPOLLIN | EPOLLRDHUP, {kOutgoing, peers_.size()}))
    return nullptr;
  return peer;
}

// Makes the ring to worker `id` and hands it over with the eventfds; false (the worker
// lost) when the socket no longer takes them. The peer's mutex is held.
bool ShmTransport::start_ring(int32_t id, Peer& peer) {
  peer.region = shm::make_region(ShmRing::region_bytes(ring_bytes_));
  ShmRing::format(peer.region.base(), ring_bytes_);
  peer.ring = std::make_unique<ShmRing>(peer.region.base(), peer.region.bytes());
  peer.wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  peer.room.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  const bool sent = peer.wake.valid() && peer.room.valid() &&
                    shm::send_with_fds(peer.socket.get(), kHello, {peer.region.fd(), peer.wake.get(), peer.room.get()});
  peer.region.close_fd();
  // The worker went, or this side could not wait for its room: lost, as TCP would say.
  if (!sent || !epoll_.add(peer.room.get(), EPOLLIN, {kRoom, static_cast<uint64_t>(id)})) {
    lose(peer);
    return false;
  }
  return true;
}

void ShmTransport::send(int32_t dst, std::vector<OutgoingFrame> frames) {
  DDPSCOPE_CHECK(!closed_.load(), "the RPC transport is closed");
  Peer* peer = peers_.find(dst);
  DDPSCOPE_CHECK(peer, "the shared-memory transport does not serve worker ", dst, " (it is reached another way)");
  DDPSCOPE_CHECK(frames.size() <= kMaxFrames, "an RPC message of ", frames.size(), " frames (at most ", kMaxFrames,
                 ")");
  MessagePieces message(frames);
  const std::span<iovec> pieces = message.pieces();
  std::lock_guard<std::mutex> lock(peer->mutex);
  if (peer->lost) return;  // as a queue to a peer that is gone: the agent fails its calls
  if (!peer->ring && !start_ring(dst, *peer)) return;
  if (peer->queue.empty()) write_locked(*peer, pieces);
  if (peer->lost) return;
  peer->queue.keep(pieces, frames);
  flush_locked(*peer);
}

// Writes `pieces` into the ring, and goes on while the reader makes room for the rest.
void ShmTransport::write_locked(Peer& peer, std::span<iovec> pieces) {
  auto progress = Clock::now();
  for (;;) {
    const ssize_t n = peer.ring->write_some(pieces);
    if (n < 0) return lose(peer);
    if (n > 0 && peer.ring->reader_needs_wake()) signal(peer.wake.get());
    if (std::all_of(pieces.begin(), pieces.end(), [](const iovec& v) { return v.iov_len == 0; })) return;
    const auto now = Clock::now();
    if (n > 0) progress = now;
    if (now - progress > kSendSpin) return;  // the reader is not taking: poll() writes the rest
    cpu_relax();
  }
}

// Writes what the queue holds as far as the ring has room; what is left waits for the
// reader's signal of room (poll() then comes back here).
void ShmTransport::flush_locked(Peer& peer) {
  while (!peer.queue.empty() && !peer.lost) {
    const bool ok = peer.queue.flush([&peer](std::span<iovec> pieces) {
      const ssize_t n = peer.ring->write_some(pieces);
      if (n > 0 && peer.ring->reader_needs_wake()) signal(peer.wake.get());
      return n;
    });
    if (!ok) return lose(peer);
    if (peer.queue.empty()) break;
    if (!peer.ring->wait_for_room()) return;  // the reader signals once it made room
  }
  peer.ring->stop_waiting_for_room();
}

void ShmTransport::flush(int32_t id) {
  Peer& peer = *peers_.find(id);
  std::lock_guard<std::mutex> lock(peer.mutex);
  if (!peer.lost) flush_locked(peer);
}

// The peer's mutex is held. Said to the agent at the next poll().
void ShmTransport::lose(Peer& peer) {
  if (peer.lost) return;
  peer.lost = true;
  peer.queue.clear();
  if (peer.socket.valid()) epoll_.remove_before_close(peer.socket.get());
  if (peer.room.valid()) epoll_.remove_before_close(peer.room.get());
  peer.socket.reset();
}

void ShmTransport::poll(std::chrono::milliseconds wait, TransportEvents& events) {
  peers_.report(events);
  if (read_rings_and_due_fds(events) || spin(events)) return;
  if (going_to_sleep()) {
    epoll_.dispatch(wait, [&](EpollTag tag, uint32_t) { handle(tag, events); });
    fds_looked_at_ = Clock::now();
  }
  awake();
  read_rings(events);
}

// The rings, and a short spin for a reply on its way; no system call when bytes are there.
void ShmTransport::look(TransportEvents& events) {
  peers_.report(events);
  if (!read_rings_and_due_fds(events)) spin(events);
}

// Woken by its descriptors: each is handled (a wake-up drained, room written into, a hello
// taken), not only the rings read, or a wake-up left unread would end the next sleep at once.
void ShmTransport::on_ready(TransportEvents& events) {
  peers_.report(events);
  handle_ready(events);
  read_rings(events);
}

// Writers wake this side only once it says it sleeps: false when bytes came meanwhile.
bool ShmTransport::going_to_sleep() {
  bool came = false;
  for (auto& in : inbound_)
    if (in && in->ring) came = in->ring->going_to_sleep() || came;
  return !came;
}

void ShmTransport::awake() {
  for (auto& in : inbound_)
    if (in && in->ring) in->ring->awake();
}

bool ShmTransport::read_rings(TransportEvents& events) {
  bool any = false;
  for (size_t k = 0; k < inbound_.size(); ++k) {
    Inbound* in = inbound_[k].get();
    if (in && in->ring && (in->ring->readable() > 0 || in->ring->broken())) {
      read_ring(*in, events);
      any = true;
    }
  }
  return any;
}

bool ShmTransport::read_rings_and_due_fds(TransportEvents& events) {
  if (!read_rings(events)) return false;
  if (Clock::now() - fds_looked_at_ >= kFdsEvery) handle_ready(events);
  return true;
}

// Waits a little for bytes without sleeping, looking at the other fds now and then. True
// when something came.
bool ShmTransport::spin(TransportEvents& events) {
  if (std::none_of(inbound_.begin(), inbound_.end(), [](const auto& in) { return in && in->ring; })) return false;
  const auto until = Clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (read_rings(events)) return true;
    if (i % 32 == 0) {
      if (handle_ready(events) > 0) return true;
      if (Clock::now() > until) return false;
      ::sched_yield();  // two cores: the thread that will answer may need this one
    }
    cpu_relax();
  }
}

int ShmTransport::handle_ready(TransportEvents& events) {
  fds_looked_at_ = Clock::now();
  return epoll_.dispatch(std::chrono::milliseconds(0), [&](EpollTag tag, uint32_t) { handle(tag, events); });
}

void ShmTransport::handle(EpollTag tag, TransportEvents& events) {
  const uint8_t kind = tag.kind;
  const uint64_t index = tag.index;
  if (kind == kListener) {
    accept_all();
  } else if (kind == kOutgoing) {
    Peer& peer = *peers_.find(static_cast<int32_t>(index));
    std::lock_guard<std::mutex> lock(peer.mutex);
    lose(peer);  // never written to: readable means the worker closed it
  } else if (kind == kRoom) {
    drain(peers_.find(static_cast<int32_t>(index))->room.get());
    flush(static_cast<int32_t>(index));
  } else if (index < inbound_.size() && inbound_[index]) {
    Inbound& in = *inbound_[index];
    if (kind == kWake) {
      drain(in.wake.get());
      read_ring(in, events);
    } else {
      on_inbound_socket(in, events);
    }
  }
}

void ShmTransport::accept_all() {
  for (;;) {
    UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;
    if (!shm::same_user(fd.get())) continue;  // a ring is shared with this user's processes only
    size_t slot = 0;
    while (slot < inbound_.size() && inbound_[slot])
      ++slot;
    if (slot >= kMaxInbound) continue;  // a job has fewer workers on one host than this
    // One that cannot be watched would never be read: closed now (its writer sees it close).
    if (!epoll_.add(fd.get(), EPOLLIN | EPOLLRDHUP, {kInbound, slot})) continue;
    if (slot == inbound_.size()) inbound_.emplace_back();
    inbound_[slot] = std::make_unique<Inbound>(std::move(fd), slot, max_frame_bytes_);
  }
}

// The socket of a worker that writes to this one: first its hello with the ring, after
// that only its closing.
void ShmTransport::on_inbound_socket(Inbound& in, TransportEvents& events) {
  if (!in.ring) {
    std::string hello;
    std::vector<int> fds;
    const int got = shm::receive_with_fds(in.socket.get(), hello, fds);
    if (got == 0) return;
    if (got < 0) return drop(in);
    std::string why = hello != kHello || fds.size() != 3 ? "a hello that is not a ddpscope worker's" : "";
    if (why.empty() && (!shm::is_nonblocking_eventfd(fds[1]) || !shm::is_nonblocking_eventfd(fds[2])))
      why = "a hello whose wake-up descriptors are not non-blocking eventfds";
    if (why.empty()) {
      try {
        in.region = shm::map_region(fds[0], kMaxRegionBytes);
        in.ring = std::make_unique<ShmRing>(in.region.base(), in.region.bytes());
        in.wake.reset(fds[1]);
        in.room.reset(fds[2]);
        fds.clear();
      } catch (const Error& e) {
        fds.erase(fds.begin());  // map_region closed it
        why = e.message();
      }
    }
    for (int fd : fds)
      ::close(fd);
    if (!why.empty()) {
      events.on_rejected(wire::Rejection::Malformed, "shared-memory RPC: " + why);
      return drop(in);
    }
    if (!epoll_.add(in.wake.get(), EPOLLIN, {kWake, in.slot})) return drop(in);  // it could never wake this side
    return read_ring(in, events);
  }
  char byte;
  const ssize_t n = ::recv(in.socket.get(), &byte, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n > 0) events.on_rejected(wire::Rejection::Malformed, "shared-memory RPC: bytes on a ring's socket");
  read_ring(in, events);  // what it wrote whole before it went is delivered
  drop(in);
}

void ShmTransport::read_ring(Inbound& in, TransportEvents& events) {
  const auto deliver = [&events](IncomingMessage m) { events.on_message(std::move(m)); };
  std::string why;
  for (int reads = 0; reads < kReadsPerPoll; ++reads) {
    if (in.ring->broken()) {
      events.on_rejected(wire::Rejection::Malformed, "shared-memory RPC: a ring's indices are out of range");
      return drop(in);
    }
    const auto [where, room] = in.reader.space();
    const size_t got = in.ring->read(where, room);
    if (got == 0) return;
    if (in.ring->writer_needs_wake()) signal(in.room.get());
    if (!in.reader.received(got, deliver, &why)) {
      events.on_rejected(wire::Rejection::Malformed, why);  // not this transport's traffic
      return drop(in);
    }
  }
}

void ShmTransport::drop(Inbound& in) {
  epoll_.remove_before_close(in.socket.get());
  if (in.wake.valid()) epoll_.remove_before_close(in.wake.get());
  inbound_[in.slot].reset();  // its descriptors close with it
}

void ShmTransport::close() {
  if (closed_.exchange(true)) return;
  peers_.close_all([](Peer& p) {
    p.socket.reset();
    p.wake.reset();
    p.room.reset();
  });
  inbound_.clear();  // their descriptors close with them
  listen_fd_.reset();
  epoll_.close();
}

}  // namespace ddpscope::rpc
