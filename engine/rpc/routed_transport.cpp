#include "routed_transport.h"

#include <sys/epoll.h>

#include <cerrno>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::rpc {
namespace {

// Passes everything on and counts the messages, so poll() knows whether to wait.
class CountingEvents final : public TransportEvents {
 public:
  explicit CountingEvents(TransportEvents& to) : to_(to) {}
  void on_message(IncomingMessage message) override {
    ++messages;
    to_.on_message(std::move(message));
  }
  void on_rejected(wire::Rejection why, const std::string& what) override { to_.on_rejected(why, what); }
  void on_peer_connected(int32_t peer) override { to_.on_peer_connected(peer); }
  void on_peer_lost(int32_t peer) override { to_.on_peer_lost(peer); }
  int messages = 0;

 private:
  TransportEvents& to_;
};

}  // namespace

RoutedTransport::RoutedTransport(std::vector<std::unique_ptr<Transport>> transports)
    : transports_(std::move(transports)) {
  DDPSCOPE_CHECK(!transports_.empty(), "a routed RPC transport needs at least one transport");
  for (size_t i = 0; i < transports_.size(); ++i) {
    const int fd = transports_[i]->wait_fd();
    DDPSCOPE_CHECK(fd >= 0 && epoll_.add(fd, EPOLLIN, {0, i}), "the RPC transports cannot be watched together: ",
                   fd < 0 ? "one has no descriptor to wait on" : std::strerror(errno));
  }
}

RoutedTransport::~RoutedTransport() { close(); }

std::vector<std::string> RoutedTransport::split_endpoints(const std::string& joined) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= joined.size();) {
    const size_t comma = std::min(joined.find(',', start), joined.size());
    if (comma > start) out.push_back(joined.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string RoutedTransport::join_endpoints(const std::vector<std::string>& endpoints) {
  std::string joined;
  for (const std::string& e : endpoints)
    joined += (joined.empty() ? "" : ",") + e;
  return joined;
}

std::string RoutedTransport::endpoint() const {
  std::vector<std::string> mine;
  for (const auto& t : transports_)
    mine.push_back(t->endpoint());
  return join_endpoints(mine);
}

void RoutedTransport::expect_token(const std::string& token) {
  for (auto& t : transports_)
    t->expect_token(token);
}

void RoutedTransport::connect(const std::vector<std::string>& endpoints) {
  std::vector<std::vector<std::string>> lists;
  for (const std::string& e : endpoints)
    lists.push_back(split_endpoints(e));
  route_.assign(endpoints.size(), -1);
  // Each transport in turn takes the workers none before it serves, by the first of their
  // endpoints it accepts; one it then cannot reach is left to the next.
  for (size_t i = 0; i < transports_.size(); ++i) {
    std::vector<std::string> theirs(endpoints.size());
    for (size_t r = 0; r < endpoints.size(); ++r) {
      if (route_[r] >= 0) continue;
      for (const std::string& e : lists[r])
        if (theirs[r].empty() && transports_[i]->accepts(e)) theirs[r] = e;
    }
    transports_[i]->connect(theirs);
    for (size_t r = 0; r < endpoints.size(); ++r)
      if (route_[r] < 0 && !theirs[r].empty() && transports_[i]->serves(static_cast<int32_t>(r)))
        route_[r] = static_cast<int>(i);
  }
  for (size_t r = 0; r < endpoints.size(); ++r)
    DDPSCOPE_CHECK(route_[r] >= 0, "init_rpc: worker ", r, " listens on '", endpoints[r],
                   "', which no RPC transport of this worker reaches (another transport's endpoint); give every "
                   "worker the same DDPSCOPE_RPC_TRANSPORT");
}

Transport* RoutedTransport::route_of(int32_t peer) const {
  if (peer < 0 || static_cast<size_t>(peer) >= route_.size() || route_[static_cast<size_t>(peer)] < 0) return nullptr;
  return transports_[static_cast<size_t>(route_[static_cast<size_t>(peer)])].get();
}

void RoutedTransport::send(int32_t dst, std::vector<OutgoingFrame> frames) {
  Transport* t = route_of(dst);
  DDPSCOPE_CHECK(t, "no RPC worker ", dst);
  t->send(dst, std::move(frames));
}

void RoutedTransport::poll(std::chrono::milliseconds wait, TransportEvents& events) {
  CountingEvents counted(events);
  for (auto& t : transports_)
    t->look(counted);
  // Messages came: back to the agent. Otherwise the wait (none for poll(0), which still
  // handles what the transports' descriptors have ready: a hello, room, a peer gone).
  if (counted.messages > 0) return;
  bool sleep = true;
  for (auto& t : transports_)
    sleep = t->going_to_sleep() && sleep;  // every one told, whatever the others said
  size_t ready[64];                        // the transports with a descriptor ready (dispatch hands 64 at most)
  int n = 0;
  if (sleep) epoll_.dispatch(wait, [&](EpollTag tag, uint32_t) { ready[n++] = tag.index; });
  for (auto& t : transports_)
    t->awake();
  if (!sleep) {  // something came as they were told: look at all again
    for (auto& t : transports_)
      t->look(events);
    return;
  }
  for (int k = 0; k < n; ++k)
    transports_[ready[k]]->on_ready(events);
}

void RoutedTransport::close() {
  for (auto& t : transports_)
    t->close();
  epoll_.close();
}

}  // namespace ddpscope::rpc
