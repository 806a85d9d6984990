// EventSink: where a process's shipper sends its batches: straight into a run file
// (RunStoreSink) or to the job's collector (CollectorSink).
#pragma once

#include <chrono>
#include <cstdint>

#include "event_batch.h"

namespace ddpscope::probes {

class EventSink {
 public:
  virtual ~EventSink() = default;
  // Delivers one batch; false when it could not (its events then count as dropped).
  // Must not block for long: training threads never wait on it, but the shipper does.
  virtual bool write(const EventBatch& batch) = 0;
  // Called by the shipper between batches (clock measurement).
  virtual void tick() {}
  // The offset to add to this process's clock to reach the run's time axis.
  virtual int64_t clock_offset_ns() const { return 0; }
  // Events known to be committed to the run file (a direct sink: all it accepted).
  virtual uint64_t confirmed_events() const = 0;
  // Waits up to `timeout` until every accepted event is confirmed.
  virtual void settle(std::chrono::milliseconds timeout) {}
};

}  // namespace ddpscope::probes
