// Flight-recorder dumps (PyTorch's, one file per rank, or ddpscope's) as a run file: the
// records into its `collectives` table, and each record with times as a process-group op
// on the timeline (a span when it completed, a start when it did not), so every view,
// the Hang view's grid first, reads it as it reads an engine job's run.
//
//   FlightImportResult r = import_flight_dumps({"nccl_trace_rank_0", "nccl_trace_rank_1"}, "hang.ddprun");
//
// The run is written beside `out` and renamed into place once complete.
#pragma once

#include <string>
#include <vector>

#include "flight_records.h"

namespace ddpscope::probes {

struct FlightImportResult {
  std::vector<int> ranks;  // ranks imported, ascending
  int world_size = 0;
  int64_t records = 0;
  std::vector<std::string> notes;  // ranks of the groups with no dump, ...
};

// Throws RunStoreError naming the file and what was wrong (not a dump, two dumps of one
// rank, --out exists without force).
FlightImportResult import_flight_dumps(const std::vector<std::string>& paths, const std::string& out,
                                       bool force = false);

// Reads dumps into one set of records (`ddpscope-cli hang DUMP...`); same errors.
FlightData read_flight_dumps(const std::vector<std::string>& paths);

}  // namespace ddpscope::probes
