// Writes a run as a Chrome trace (the JSON "Trace Event Format" that Perfetto and
// chrome://tracing open): one process per rank, one track per thread, spans as complete
// events with their arguments, instants as instant events, times on the run's shared
// (clock-aligned) axis in microseconds from the first event.
#pragma once

#include <cstdint>
#include <string>

#include "run_store_reader.h"

namespace ddpscope::probes {

// Returns the number of trace events written. Throws ddpscope::Error when the output
// cannot be written.
int64_t export_chrome_trace(RunStoreReader& run, const std::string& out_path);

}  // namespace ddpscope::probes
