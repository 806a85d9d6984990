// An epoll set: the descriptors a transport's poll() waits on, each with a tag that says
// what it is (a listener, a peer's connection, a ring's doorbell) and its index; dispatch()
// hands each ready one, so tagged, to the transport's handler. Adding or
// changing a descriptor says whether the kernel took it, so that a caller drops a connection
// it cannot watch instead of leaving it silent; removing is for a descriptor closed right
// after, which leaves the set either way.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>

#include "ddpscope/unique_fd.h"

namespace ddpscope::rpc {

// What a descriptor is to its transport: a kind of the transport's own numbering (its
// listener, a peer's connection, a doorbell...) and its index among those (below 2^56).
struct EpollTag {
  uint8_t kind = 0;
  uint64_t index = 0;
};

class EpollSet {
 public:
  EpollSet();  // throws Error when the kernel gives none (out of descriptors)

  int fd() const { return set_.get(); }  // readable when a descriptor of the set is ready
  [[nodiscard]] bool add(int fd, uint32_t events, EpollTag tag);
  [[nodiscard]] bool modify(int fd, uint32_t events, EpollTag tag);
  void remove_before_close(int fd);
  // Waits up to `wait` for ready descriptors and calls handle(tag, events) for each (64 at
  // most a call); returns how many were ready, 0 when interrupted.
  template <class Handle>
  int dispatch(std::chrono::milliseconds wait, Handle&& handle) {
    epoll_event ready[64];
    const int n = wait_for(ready, 64, wait);
    for (int k = 0; k < n; ++k)
      handle(unpack(ready[k].data.u64), ready[k].events);
    return n;
  }
  void close() { set_.reset(); }

 private:
  static EpollTag unpack(uint64_t data) { return {static_cast<uint8_t>(data >> 56), data & ((uint64_t{1} << 56) - 1)}; }
  int wait_for(epoll_event* ready, int room, std::chrono::milliseconds wait);

  UniqueFd set_;
};

}  // namespace ddpscope::rpc
