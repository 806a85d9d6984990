#include "epoll_set.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::rpc {
namespace {

bool control(int set, int op, int fd, uint32_t events, EpollTag tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = uint64_t{tag.kind} << 56 | (tag.index & ((uint64_t{1} << 56) - 1));
  return ::epoll_ctl(set, op, fd, &ev) == 0;
}

}  // namespace

EpollSet::EpollSet() : set_(::epoll_create1(EPOLL_CLOEXEC)) {
  DDPSCOPE_CHECK(set_.valid(), "the RPC transport cannot make an epoll set: ", std::strerror(errno));
}

bool EpollSet::add(int fd, uint32_t events, EpollTag tag) {
  return control(set_.get(), EPOLL_CTL_ADD, fd, events, tag);
}

bool EpollSet::modify(int fd, uint32_t events, EpollTag tag) {
  return control(set_.get(), EPOLL_CTL_MOD, fd, events, tag);
}

void EpollSet::remove_before_close(int fd) {
  // Its error is of no use: closing the descriptor takes it out of the set anyway.
  [[maybe_unused]] const int rc = ::epoll_ctl(set_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

int EpollSet::wait_for(epoll_event* ready, int room, std::chrono::milliseconds wait) {
  const int n = ::epoll_wait(set_.get(), ready, room, static_cast<int>(std::max<int64_t>(wait.count(), 0)));
  return n < 0 ? 0 : n;  // EINTR (a stack capture's signal): nothing ready this time
}

}  // namespace ddpscope::rpc
