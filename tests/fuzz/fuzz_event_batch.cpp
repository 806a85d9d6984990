// libFuzzer harness of the collector's batch decoder (probes/runtime/event_batch.h): the bytes
// a rank sends after the run's token; and of the clock socket's messages (a ping, a
// pong and the offset arithmetic on the time it carries, collector_protocol.h). Any input must decode or be refused
// with a ddpscope::Error; never crash, hang, or allocate beyond what the input can describe.
#include <cstddef>
#include <cstdint>

#include "clock_offset_estimator.h"
#include "collector_protocol.h"
#include "event_batch.h"
#include "ddpscope/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The clock socket's messages: a ping at the collector, a pong at a rank, then the
  // offset arithmetic on the collector's time as it arrived.
  const auto ping = ddpscope::probes::decode_clock_message<ddpscope::probes::ClockPing>(data, size);
  const auto pong = ddpscope::probes::decode_clock_message<ddpscope::probes::ClockPong>(data, size);
  if (pong) {
    ddpscope::probes::ClockOffsetEstimator estimator;
    estimator.add(pong->t0_ns, pong->t_collector_ns, static_cast<int64_t>(pong->sequence));
    estimator.add(0, pong->t_collector_ns, 1000);
  }
  volatile bool sink_clock = ping.has_value();
  (void)sink_clock;
  try {
    const auto b = ddpscope::probes::decode(data, size);
    volatile size_t sink = b.events.size() + b.names.size() + b.records.size() + b.threads.size();
    (void)sink;
  } catch (const ddpscope::Error&) {
  }
  return 0;
}
