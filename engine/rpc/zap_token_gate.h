// The ZeroMQ RPC transport's door: ZeroMQ's authentication protocol (ZAP) checks each
// connection's PLAIN password against the job's token during ZeroMQ's handshake, before
// the connection can send a single message. Without it a ROUTER reads every frame a peer
// sends (up to its size limit, 4 GiB by default) before anything of ours looks at it: one
// 1 GiB frame behind a wrong token took a worker from 176 to 1,200 MB.
//
// The gate answers ZAP requests on its own thread, from the inproc endpoint ZeroMQ asks
// in the context it is given. Until a token is set (and for a transport that expects
// none) it lets every connection in, as ZeroMQ's NULL mechanism would.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <zmq.hpp>

namespace ddpscope::rpc {

class ZapTokenGate {
 public:
  explicit ZapTokenGate(zmq::context_t& context);
  ~ZapTokenGate();
  ZapTokenGate(const ZapTokenGate&) = delete;
  ZapTokenGate& operator=(const ZapTokenGate&) = delete;

  void set_token(const std::string& token);
  // Connections turned away for a wrong password (or another mechanism than PLAIN).
  uint64_t refused() const { return refused_.load(); }
  // Stops the thread and closes the socket (before the context can end); idempotent.
  void close();

 private:
  void serve();
  bool admits(const std::string& mechanism, const std::string& password);

  zmq::socket_t socket_;
  std::mutex mutex_;
  std::string token_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

// The PLAIN user name every worker gives; the password is the job's token.
inline constexpr const char* kRpcPlainUser = "ddpscope-rpc";

}  // namespace ddpscope::rpc
