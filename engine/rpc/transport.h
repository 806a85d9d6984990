// Transport: how an RPC agent's messages reach other workers, apart from what they mean.
// As Gloo keeps transport::Pair apart from tcp::Pair, the agent (calls, timeouts,
// serving) talks only to this interface. A job uses shared memory between the workers of
// one host and TCP between hosts (routed_transport.h; the default), TCP alone
// or ZeroMQ (zmq_transport.h), as DDPSCOPE_RPC_TRANSPORT chooses (transport_choice.h); tests
// put their own in its place (an in-process hub, a transport that delays or drops).
//
// A message is a list of frames: the token, the header, the body, one frame a tensor
// (wire_format.h). The transport moves frames and says when a peer's connection breaks
// or comes back; it neither reads nor checks them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wire_format.h"

namespace ddpscope::rpc {

// One frame to send. `owner` set: the bytes stay valid while `owner` lives, so the
// transport may send them after send() returns without a copy (large tensors). Null:
// the transport copies them before send() returns.
struct OutgoingFrame {
  const void* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

// One received frame; `owner` keeps the bytes alive (a tensor's storage may adopt it).
struct IncomingFrame {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

struct IncomingMessage {
  std::vector<IncomingFrame> frames;
  int64_t t_begin_ticks = 0;  // probes' clock when its first frame was read (0: probes off)
};

// What a transport reports to its agent, all on the thread that called poll().
class TransportEvents {
 public:
  virtual ~TransportEvents() = default;
  virtual void on_message(IncomingMessage message) = 0;
  // Traffic refused before it became a message (too many frames, say).
  virtual void on_rejected(wire::Rejection why, const std::string& what) = 0;
  virtual void on_peer_connected(int32_t peer) = 0;
  // The connection to `peer` broke: the process died or closed its end.
  virtual void on_peer_lost(int32_t peer) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Where this end is reached: what the other workers are told to connect to.
  virtual std::string endpoint() const = 0;
  // The job's token, before connect(): a transport that reads a message in pieces (TCP)
  // refuses a connection whose first message does not start with it before it reads or
  // allocates the rest, so a stranger's claimed sizes cost nothing. Others leave the check
  // to the agent (wire::decode_message), which every message passes through anyway.
  virtual void expect_token(const std::string& token) { (void)token; }
  // Connects to every worker, this one included (`endpoints[id]` is worker id's).
  virtual void connect(const std::vector<std::string>& endpoints) = 0;
  // Sends one message to worker `dst`. Safe from any thread; messages to one peer keep
  // their order. Throws when the transport is closed.
  virtual void send(int32_t dst, std::vector<OutgoingFrame> frames) = 0;
  // Waits at most `wait` for traffic and reports what came to `events`. One thread only.
  virtual void poll(std::chrono::milliseconds wait, TransportEvents& events) = 0;
  // For routing (routed_transport.h), which picks for each worker the first of its transports
  // that serves it: whether an endpoint is of a form this transport reaches (its scheme;
  // shared memory: this host's), and whether connect() reached worker `peer`.
  virtual bool accepts(const std::string& endpoint) const { return !endpoint.empty(); }
  virtual bool serves(int32_t peer) const { return peer >= 0; }
  // For a loop that waits on several transports at once: a descriptor readable when poll()
  // has something to do (-1: none), and the calls around such a wait. going_to_sleep() is
  // false when something came meanwhile (then the loop does not sleep); awake() after it.
  virtual int wait_fd() const { return -1; }
  virtual bool going_to_sleep() { return true; }
  virtual void awake() {}
  // A look without sleeping, before such a wait: what has come is delivered (its
  // descriptors' events may wait for on_ready(), which the wait then calls at once).
  virtual void look(TransportEvents& events) { poll(std::chrono::milliseconds(0), events); }
  // Its wait_fd() was readable: what is ready is handled now, without waiting.
  virtual void on_ready(TransportEvents& events) { poll(std::chrono::milliseconds(0), events); }
  // Stops sending and receiving; later sends throw. What still waits in this end's queue
  // may be dropped (a caller that must know it arrived waits for an answer). Idempotent.
  virtual void close() = 0;
};

}  // namespace ddpscope::rpc
