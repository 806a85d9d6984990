// An epoll set: the descriptors a transport's poll() waits on, each with a tag that says
// what it is (a listener, a peer's connection, a ring's doorbell) and its index. Adding or
// changing a descriptor says whether the kernel took it, so that a caller drops a connection
// it cannot watch instead of leaving it silent; removing is for a descriptor closed right
// after, which leaves the set either way.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>

#include "ddpscope/unique_fd.h"

namespace ddpscope::rpc {

class EpollSet {
 public:
  EpollSet();  // throws Error when the kernel gives none (out of descriptors)

  int fd() const { return set_.get(); }  // readable when a descriptor of the set is ready
  [[nodiscard]] bool add(int fd, uint32_t events, uint64_t tag);
  [[nodiscard]] bool modify(int fd, uint32_t events, uint64_t tag);
  void remove_before_close(int fd);
  // The ready descriptors (at most `room`), waiting up to `wait`; 0 when interrupted.
  int wait(epoll_event* ready, int room, std::chrono::milliseconds wait);
  void close() { set_.reset(); }

 private:
  UniqueFd set_;
};

}  // namespace ddpscope::rpc
