#include "shm_handshake.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <utility>

#include "ddpscope/error.h"

namespace ddpscope::rpc::shm {

namespace {
constexpr int kMaxFds = 4;
constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
}  // namespace

std::string host_key() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  struct stat net {};
  if (!std::getline(boot, id) || id.empty() || ::stat("/proc/self/ns/net", &net) != 0) return "";
  return id + "-" + std::to_string(net.st_dev) + "." + std::to_string(net.st_ino);
}

Region::Region(Region&& other) noexcept { *this = std::move(other); }

Region& Region::operator=(Region&& other) noexcept {
  if (this != &other) {
    this->~Region();
    fd_ = std::exchange(other.fd_, -1);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Region::~Region() {
  if (base_) ::munmap(base_, bytes_);
  close_fd();
  base_ = nullptr;
}

void Region::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Region make_region(size_t bytes) {
  const int fd = ::memfd_create("ddpscope-rpc-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  DDPSCOPE_CHECK(fd >= 0, "the shared-memory RPC transport cannot make a memory file: ", std::strerror(errno),
                 " (DDPSCOPE_RPC_TRANSPORT=tcp avoids shared memory)");
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0 || ::fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
    const int e = errno;
    ::close(fd);
    throw DDPSCOPE_ERROR("the shared-memory RPC transport cannot size a ", bytes,
                         "-byte memory file: ", std::strerror(e));
  }
  // Populated now, so that the first messages do not pay the page faults.
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    throw DDPSCOPE_ERROR("the shared-memory RPC transport cannot map ", bytes, " bytes: ", std::strerror(e));
  }
  return Region(fd, base, bytes);
}

Region map_region(int fd, size_t max_bytes) {
  struct stat st {};
  const int seals = ::fcntl(fd, F_GET_SEALS);
  const bool ok = ::fstat(fd, &st) == 0 && seals >= 0 && (static_cast<unsigned>(seals) & kSeals) == kSeals &&
                  st.st_size > 0 && static_cast<size_t>(st.st_size) <= max_bytes;
  if (!ok) {
    ::close(fd);
    throw DDPSCOPE_ERROR("a worker sent memory that is not a sealed ring of at most ", max_bytes,
                         " bytes (another program on this host's RPC socket?)");
  }
  const auto bytes = static_cast<size_t>(st.st_size);
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    throw DDPSCOPE_ERROR("cannot map a worker's ", bytes, "-byte ring: ", std::strerror(e));
  }
  Region region(fd, base, bytes);
  region.close_fd();  // the mapping is all that is needed
  return region;
}

bool send_with_fds(int socket, const std::string& payload, const std::vector<int>& fds) {
  if (fds.size() > kMaxFds) return false;
  char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  iovec iov{const_cast<char*>(payload.data()), payload.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  ssize_t n;
  do {
    n = ::sendmsg(socket, &m, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(payload.size());
}

int receive_with_fds(int socket, std::string& payload, std::vector<int>& fds) {
  char buffer[256];
  char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  iovec iov{buffer, sizeof(buffer)};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(socket, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  fds.clear();
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t k = 0; k < count; ++k) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
      fds.push_back(fd);
    }
  }
  if (n <= 0 || (m.msg_flags & MSG_CTRUNC)) {  // closed, broken, or more descriptors than sent here
    for (int fd : fds)
      ::close(fd);
    fds.clear();
    return -1;
  }
  payload.assign(buffer, static_cast<size_t>(n));
  return 1;
}

bool is_nonblocking_eventfd(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || !(flags & O_NONBLOCK)) return false;
  char target[64] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  return n > 0 && std::string_view(target, static_cast<size_t>(n)) == "anon_inode:[eventfd]";
}

bool same_user(int socket) {
  ucred peer{};
  socklen_t length = sizeof(peer);
  return ::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 && peer.uid == ::geteuid();
}

}  // namespace ddpscope::rpc::shm
