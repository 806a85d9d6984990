// libFuzzer harness of the PyTorch profiler trace reader (Kineto's JSON and the older
// list form): the input is written as a trace file and streamed as import-torch's two
// passes stream it. A damaged or hostile trace must give a TraceFileError, never a crash,
// a hang, or memory past the fuzzer's limits (run_fuzz.sh: 1 GiB resident, 256 MiB a
// malloc): a claimed world size, a huge string or a deep nesting must not size anything.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "torch_trace_reader.h"
#include "fuzz_scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ddpscope::fuzz::ScratchFile scratch("trace", ".json");
  const std::string& path = scratch.path();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    int64_t events = 0;
    const auto header = ddpscope::probes::read_torch_trace(path, [&](const ddpscope::probes::TraceEvent& e) {
      // What the importer relies on: times it can hold.
      if (e.ph != 'M' && (!std::isfinite(e.ts_us) || !std::isfinite(e.dur_us) || e.dur_us < 0)) __builtin_trap();
      ++events;
    });
    if (header.rank < -1 || header.world_size < -1) __builtin_trap();
    (void)events;
  } catch (const ddpscope::Error&) {
  }
  return 0;
}
