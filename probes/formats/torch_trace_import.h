// Imports a PyTorch job's profiler traces (one file per rank, torch_trace_reader.h) as
// one ddpscope run file, so every view reads it as it reads an engine job's run.
//
//   TorchImportResult r = import_torch_traces({"traces/"}, "job.ddprun", {});
//
// Two streaming passes over each file, never a whole-file tree: the first reads the
// header, threads, ProfilerStep spans and the collectives (for ranks, iterations,
// collective numbering and the clock); the second maps every event onto the run file's
// kinds and writes it in batches. The run is written beside `out` and renamed into
// place once complete, so a failed or cancelled import leaves no half-written run.
// What maps to what: probes/store/RUN_FILE.md, "PyTorch traces".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "torch_trace_reader.h"

namespace ddpscope::probes {

struct TorchImportOptions {
  bool force = false;  // replace an existing `out`
  // Ranks given by hand, by trace file: over the trace's distributedInfo and its name.
  std::map<std::string, int> ranks;
  // Called with the fraction of the whole import done and a line saying what runs; false
  // cancels (TraceFileError "cancelled", nothing written).
  std::function<bool(double, const std::string&)> progress;
};

struct RankClock {
  int rank = 0;
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = -1;  // -1: no collective to align on
  int matched_collectives = 0;
  bool kept = false;  // ddpscope's own export: the run's clock, taken as it is
};

struct TorchImportResult {
  std::vector<int> ranks;                   // ranks imported, ascending
  std::vector<std::pair<int, int>> absent;  // ranks of the job with no trace: [first, last] runs
  int world_size = 0;
  int64_t events = 0;
  std::vector<RankClock> clocks;
  std::vector<std::string> notes;  // what a user should know (absent ranks, ...)
};

TorchImportResult import_torch_traces(const std::vector<std::string>& inputs, const std::string& out,
                                      const TorchImportOptions& options = {});

// The trace files named by `inputs`: a file as it is, a folder's *.json and *.json.gz
// files (not its sub-folders), sorted. Throws TraceFileError when there are none.
std::vector<std::string> list_trace_files(const std::vector<std::string>& inputs);

// The rank in a trace file's name as tools name them ("rank0", "rank-3", "rank_12",
// "worker.rank3.pt...", TensorBoard's "worker0.pt.trace.json"), -1 when none.
int rank_from_file_name(const std::string& path);

}  // namespace ddpscope::probes
