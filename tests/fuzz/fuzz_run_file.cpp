// libFuzzer harness of the run-file reader on damaged files: the input is written as a
// file and opened as the CLI and the app open a run (read-only), then every query they
// make is run. A damaged file must give a RunStoreError, never a crash or a hang.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "run_store_reader.h"
#include "fuzz_scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ddpscope::fuzz::ScratchFile scratch("run", ".ddprun");
  const std::string& path = scratch.path();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    ddpscope::probes::RunStoreReader run(path);
    (void)run.run();
    for (const auto& r : run.ranks()) {
      (void)run.params(r.rank);
      (void)run.buckets(r.rank);
    }
    (void)run.threads();
    (void)run.names();
    (void)run.span_count();
    (void)run.time_range();
    int64_t n = 0;
    run.for_each_span([&](const ddpscope::probes::CompactSpan&) { ++n; });
    (void)run.spans({.limit = 100});
    (void)run.metrics();
    (void)run.messages();
    (void)run.graph_index();
    (void)run.flight();
    (void)run.stacks();
    // A selected span's whole record, as the timeline's Details reads it.
    for (const int64_t id : {int64_t{1}, n / 2, n})
      try {
        (void)run.span_by_id(id);
        (void)run.span_args(id);
      } catch (const ddpscope::Error&) {
      }
  } catch (const ddpscope::Error&) {
  }
  return 0;
}
