// An in-process transport for tests: several agents in one process exchange messages
// through a hub, no sockets and no mpirun. Closing one endpoint (or cutting it off)
// tells every other endpoint its peer was lost, as a dead process's socket would.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "rpc/transport.h"

namespace ddpscope::rpc::testing {

class LoopbackHub : public std::enable_shared_from_this<LoopbackHub> {
 public:
  explicit LoopbackHub(int workers);
  // Worker `id`'s transport (one each); its endpoint is "loopback://<id>".
  std::unique_ptr<Transport> transport(int32_t id);
  // The connection to worker `id` breaks: the others are told, what it is sent is lost.
  void cut_off(int32_t id);
  // Hands raw frames to worker `dst` as if some process had sent them.
  void inject(int32_t dst, std::vector<std::string> frames);

 private:
  friend class LoopbackTransport;
  struct Inbox {
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<IncomingMessage> messages;
    std::vector<std::pair<int32_t, bool>> peer_events;  // (peer, connected)
    bool open = true;
  };
  void deliver(int32_t dst, IncomingMessage m);
  void announce(int32_t peer, bool connected);

  std::vector<std::unique_ptr<Inbox>> inboxes_;
};

}  // namespace ddpscope::rpc::testing
