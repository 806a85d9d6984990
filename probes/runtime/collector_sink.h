// CollectorSink: a rank's connection to the job's collector. Batches go out on a ZeroMQ
// DEALER socket without blocking, and come back acknowledged once committed: when the collector is
// gone or slow and the send queue is full, the batch is refused and its events count as dropped, so
// training never waits on probes. The clock offset is measured at start and every `clock_period`.
//
// Thread-safety: used by the shipper thread only.
#pragma once

#include <chrono>
#include <string>
#include <zmq.hpp>

#include "clock_offset_estimator.h"
#include "event_sink.h"

namespace ddpscope::probes {

struct CollectorSinkOptions {
  std::string batch_endpoint;
  std::string clock_endpoint;
  std::string token;
  int64_t clock_skew_ns = 0;  // test hook (collector_protocol.h)
  int clock_samples = 16;     // pings per measurement
  std::chrono::milliseconds clock_period{5000};
};

class CollectorSink : public EventSink {
 public:
  explicit CollectorSink(CollectorSinkOptions options);
  ~CollectorSink() override;
  bool write(const EventBatch& batch) override;
  void tick() override;
  int64_t clock_offset_ns() const override { return offset_ns_; }
  uint64_t confirmed_events() const override { return confirmed_; }
  void settle(std::chrono::milliseconds timeout) override;
  // One measurement now; true when at least one ping was answered.
  bool measure_clock();
  // This process's clock as the run sees it before alignment (with the test skew).
  int64_t local_now_ns() const;

 private:
  // A request the collector sent unasked; false when `message` is not one.
  bool handle_request(const zmq::message_t& message);
  // Takes the acknowledgements that have arrived (waiting up to `timeout` for one).
  void read_acks(std::chrono::milliseconds timeout);

  CollectorSinkOptions options_;
  zmq::context_t context_;
  zmq::socket_t batches_;
  zmq::socket_t clock_;
  uint64_t ping_sequence_ = 0;
  bool tried_once_ = false;
  uint64_t accepted_ = 0;   // events ZeroMQ took
  uint64_t confirmed_ = 0;  // events the collector committed
  int64_t offset_ns_ = 0;
  std::chrono::steady_clock::time_point next_clock_{};
};

}  // namespace ddpscope::probes
