#include "collector_sink.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "collector_protocol.h"
#include "probe.h"
#include "records.h"
#include "stall_watcher.h"

namespace ddpscope::probes {

CollectorSink::CollectorSink(CollectorSinkOptions options)
    : options_(std::move(options)),
      context_(1),
      batches_(context_, zmq::socket_type::dealer),
      clock_(context_, zmq::socket_type::dealer) {
  // A short queue: a collector that stops reading costs us little memory before
  // batches are dropped; at exit, queued batches get two seconds to leave.
  batches_.set(zmq::sockopt::sndhwm, 256);
  batches_.set(zmq::sockopt::linger, 2000);
  // Queue only on a live connection: once the collector is gone, sends are refused
  // (and counted as dropped) instead of piling up unseen in a queue that never drains.
  batches_.set(zmq::sockopt::immediate, 1);
  batches_.connect(options_.batch_endpoint);
  clock_.set(zmq::sockopt::linger, 0);
  clock_.connect(options_.clock_endpoint);
  measure_clock();
}

CollectorSink::~CollectorSink() = default;

namespace {
// zmq::poll throws when a signal interrupts it: a stack capture (native_stacks.h) signals
// every thread of the rank, this one included. An interrupted wait reads as nothing ready.
int poll_one(zmq::pollitem_t& item, std::chrono::milliseconds timeout) {
  try {
    return zmq::poll(&item, 1, timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return 0;
    throw;
  }
}
}  // namespace

int64_t CollectorSink::local_now_ns() const { return now_ns() + options_.clock_skew_ns; }

bool CollectorSink::write(const EventBatch& batch) {
  const std::string bytes = encode(batch);
  try {
    // The first batch may wait up to 2 s for the connection to come up; later ones
    // never wait.
    const bool first = !tried_once_;
    tried_once_ = true;
    if (first) batches_.set(zmq::sockopt::sndtimeo, 2000);
    auto sent = batches_.send(zmq::buffer(options_.token),
                              zmq::send_flags::sndmore | (first ? zmq::send_flags::none : zmq::send_flags::dontwait));
    if (first) batches_.set(zmq::sockopt::sndtimeo, -1);
    if (!sent) return false;  // no collector, or its queue is full
    // The first frame was taken, so ZeroMQ takes the rest of the message too.
    if (!batches_.send(zmq::buffer(bytes), zmq::send_flags::none)) return false;
    accepted_ += batch.events.size();
    read_acks(std::chrono::milliseconds(0));
    return true;
  } catch (const zmq::error_t&) {
    return false;
  }
}

void CollectorSink::read_acks(std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{batches_.handle(), 0, ZMQ_POLLIN, 0};
  if (timeout.count() > 0 && poll_one(item, timeout) <= 0) return;
  zmq::message_t message;
  while (batches_.recv(message, zmq::recv_flags::dontwait)) {
    if (message.size() != sizeof(BatchAck)) continue;
    BatchAck ack;
    std::memcpy(&ack, message.data(), sizeof(ack));
    confirmed_ += ack.events;
  }
}

void CollectorSink::settle(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (confirmed_ < accepted_ && std::chrono::steady_clock::now() < deadline) {
    read_acks(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()) +
              std::chrono::milliseconds(1));
  }
}

void CollectorSink::tick() {
  read_acks(std::chrono::milliseconds(0));
  if (std::chrono::steady_clock::now() >= next_clock_) measure_clock();
  // Requests from the collector that arrived since the last tick.
  zmq::message_t message;
  while (clock_.recv(message, zmq::recv_flags::dontwait))
    handle_request(message);
}

bool CollectorSink::handle_request(const zmq::message_t& message) {
  if (message.to_string_view() == kStacksRequest) {
    request_stacks();
    return true;
  }
  if (message.to_string_view() != kGraphRequest) return false;
  request_graph_snapshot();
  return true;
}

bool CollectorSink::measure_clock() {
  next_clock_ = std::chrono::steady_clock::now() + options_.clock_period;
  ClockOffsetEstimator estimator;
  for (int i = 0; i < options_.clock_samples; ++i) {
    const ClockPing ping{++ping_sequence_, local_now_ns()};
    try {
      clock_.send(zmq::buffer(options_.token), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      clock_.send(zmq::buffer(&ping, sizeof(ping)), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      break;
    }
    // Wait briefly for this ping's answer; late answers to older pings are skipped.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    bool answered = false;
    while (!answered && std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{clock_.handle(), 0, ZMQ_POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (poll_one(item, std::max<std::chrono::milliseconds>(left, std::chrono::milliseconds(1))) <= 0) continue;
      zmq::message_t reply;
      if (!clock_.recv(reply, zmq::recv_flags::dontwait)) continue;
      const int64_t t1 = local_now_ns();
      if (handle_request(reply)) continue;
      const auto pong = decode_clock_message<ClockPong>(reply.data(), reply.size());
      if (!pong || pong->sequence != ping.sequence) continue;
      // Our own send time, not the echo: only the collector's time comes off the wire.
      estimator.add(ping.t0_ns, pong->t_collector_ns, t1);
      answered = true;
    }
    if (!answered) break;  // collector not answering: do not stall the shipper
  }
  const auto best = estimator.best();
  if (!best) return false;
  offset_ns_ = best->offset_ns;
  queue_record(nlohmann::json{
      {"type", "clock"}, {"t_local_ns", best->t_local_ns}, {"offset_ns", best->offset_ns}, {"rtt_ns", best->rtt_ns}}
                   .dump());
  return true;
}

}  // namespace ddpscope::probes
