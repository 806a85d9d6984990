// What the shared-memory transport (shm_transport.h) needs from the operating system,
// apart from its logic: which host and network this process is on, a sealed region of
// memory to share, and passing its descriptors to another process over a Unix socket.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ddpscope::rpc::shm {

// Names this machine's boot and this process's network namespace: two workers with the
// same key can reach each other's abstract Unix sockets and share memory. Hosts made of
// network namespaces on one machine (tests/cluster) get different keys, as real hosts
// would. Empty when it cannot be read: such a worker uses TCP for everyone.
std::string host_key();

// Memory shared with another process, unmapped and closed when this goes.
class Region {
 public:
  Region() = default;
  Region(int fd, void* base, size_t bytes) : fd_(fd), base_(base), bytes_(bytes) {}
  Region(Region&& other) noexcept;
  Region& operator=(Region&& other) noexcept;
  ~Region();
  int fd() const { return fd_; }
  void* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  void close_fd();  // once sent: the mapping stays

 private:
  int fd_ = -1;
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

// A new zeroed region of `bytes`, sealed at that size (the other side checks the seals,
// so it can never be shrunk under its reads); throws Error naming the system's refusal.
Region make_region(size_t bytes);
// Maps a region another process made and sent; throws Error saying what is wrong when it
// is not a sealed memory file of at most `max_bytes`. Takes `fd` (closed on failure). Not
// populated: its pages cost this process only as they are read.
Region map_region(int fd, size_t max_bytes);

// Sends `payload` with `fds` over a Unix stream socket; false when it could not.
bool send_with_fds(int socket, const std::string& payload, const std::vector<int>& fds);
// Receives one such message: 1 when it came (`payload`, `fds` set; the caller owns them),
// 0 when nothing has yet (non-blocking socket), -1 when the socket closed or broke.
int receive_with_fds(int socket, std::string& payload, std::vector<int>& fds);

// Whether the process at the other end of a Unix socket runs as this process's user.
bool same_user(int socket);

// Whether `fd` is an eventfd opened non-blocking: what a hello's wake-up descriptors must
// be. A pipe or a blocking descriptor would let a same-user process stall or spin the
// thread that reads and writes them.
bool is_nonblocking_eventfd(int fd);

}  // namespace ddpscope::rpc::shm
