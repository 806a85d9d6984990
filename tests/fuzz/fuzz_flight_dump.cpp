// libFuzzer harness of the flight-recorder dump reader (PyTorch's JSON dumps, and
// ddpscope's): the input is written as a dump file, read as `ddpscope-cli hang DUMP`
// reads it, and, when it reads, analyzed and drawn as the Hang view's grid. A damaged or
// hostile dump must give a RunStoreError, never a crash or a hang.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "flight_analysis.h"
#include "flight_grid.h"
#include "flight_records.h"
#include "sqlite_db.h"
#include "fuzz_scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ddpscope::fuzz::ScratchFile scratch("fr", "_rank_3");
  const std::string& path = scratch.path();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    (void)ddpscope::probes::looks_like_flight_dump(path);
    ddpscope::probes::FlightData records;
    records.add(ddpscope::probes::read_flight_dump(path));
    records.sort();
    const auto verdict = ddpscope::probes::analyze_flight(records, 3, "signal 9 (Killed)");
    for (const auto& g : verdict.groups)
      (void)ddpscope::probes::flight_grid_text(ddpscope::probes::flight_grid(records, g));
  } catch (const ddpscope::Error&) {
  }
  return 0;
}
