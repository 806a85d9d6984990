// Writes a run as PyTorch profiler traces in Kineto's form, one file per rank
// (DIR/rank<R>.pt.trace.json), so the tools PyTorch users have (Perfetto, TensorBoard's
// profiler, Holistic Trace Analysis) open ddpscope's runs, and `import-torch` reads them
// back into the same run (spans, iterations, metrics, statistics).
//
// Each file has Kineto's header (schemaVersion, distributedInfo with the run's backend,
// rank and world size, baseTimeNanoseconds) and events as PyTorch names them where a
// span has a PyTorch counterpart: iterations are `ProfilerStep#N`, GPU work `kernel`,
// `gpu_memcpy`, `gpu_memset` rows with device, stream and correlation, launches
// `cuda_runtime`; everything else a `cpu_op`. Args `ddpscope.*` keep each span's kind
// and fields (iteration, bucket, bytes, seq, ...) and metrics are counter events, which
// is what makes the round trip exact. Times are the run's shared clock: every file has
// the same base, and ts is microseconds from it with nanosecond decimals.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::probes {

struct KinetoExportResult {
  std::vector<std::string> files;  // one per rank, ascending
  int64_t events = 0;
};

// Writes into `dir` (created if missing). A rank's file is written beside its name and
// renamed once whole. Throws ddpscope::Error when `dir` cannot be written, or when it
// already holds a rank file and `force` is false.
KinetoExportResult export_kineto_traces(RunStoreReader& run, const std::string& dir, bool force = false);

}  // namespace ddpscope::probes
