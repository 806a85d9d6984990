// libFuzzer harness of the collector's batch decoder (probes/event_batch.h): the bytes
// a rank sends after the run's token. Any input must decode or be refused with a
// ddpscope::Error; never crash, hang, or allocate beyond what the input can describe.
#include <cstddef>
#include <cstdint>

#include "event_batch.h"
#include "tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto b = ddpscope::probes::decode(data, size);
    volatile size_t sink = b.events.size() + b.names.size() + b.records.size() + b.threads.size();
    (void)sink;
  } catch (const ddpscope::Error&) {
  }
  return 0;
}
