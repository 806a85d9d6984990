// Shipper: the background thread of a process that drains every thread's probe buffer
// and hands the events, with queued records, to a sink in batches. It wakes every
// `interval` (no busy polling), and flush() ships synchronously.
//
// Thread-safety: flush() and the counters may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "event_sink.h"

namespace ddpscope::probes {

class Shipper {
 public:
  static constexpr size_t kMaxEventsPerBatch = 1 << 16;
  static constexpr size_t kIterationsKept = 32;

  // clock_skew_ns: test hook added to every event time (collector_protocol.h).
  Shipper(std::unique_ptr<EventSink> sink, int rank, std::chrono::milliseconds interval, int64_t clock_skew_ns = 0);
  ~Shipper();  // ships what is left, then stops
  // Ships everything recorded so far and waits (up to `settle`) until the sink confirms
  // it is in the run file.
  void flush(std::chrono::milliseconds settle = std::chrono::milliseconds(2000));
  // Events confirmed to be in the run file.
  uint64_t shipped() const { return confirmed_.load(); }
  // Dropped since this shipper started: full buffers plus batches the sink refused.
  uint64_t dropped() const;
  // Taken by the sink but not (yet) confirmed: lost if the collector is gone.
  uint64_t unconfirmed() const { return shipped_.load() - confirmed_.load(); }
  // Events taken from the buffers so far: it stands still while the process makes no progress.
  uint64_t drained() const { return shipped_.load() + undelivered_.load(); }
  // The median of the process's latest iterations (its iteration spans), 0 before any.
  int64_t median_iteration_ns() const;

 private:
  void loop();
  void ship_locked();
  void note_iteration(int64_t ns);

  std::unique_ptr<EventSink> sink_;
  const int rank_;
  const std::chrono::milliseconds interval_;
  const int64_t clock_skew_ns_;
  std::mutex ship_mutex_;  // one shipment at a time (loop or flush)
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  uint64_t sequence_ = 0;
  std::atomic<uint64_t> shipped_{0};  // taken by the sink
  std::atomic<uint64_t> confirmed_{0};
  std::atomic<uint64_t> undelivered_{0};
  uint64_t dropped_before_ = 0;  // buffers' drop counters are per process
  std::vector<Event> drained_;
  mutable std::mutex iterations_mutex_;
  std::vector<int64_t> iteration_ns_;  // the latest ones, a ring of kIterationsKept
  size_t next_iteration_ = 0;
  std::thread thread_;
};

}  // namespace ddpscope::probes
