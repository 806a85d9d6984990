// RunData: what the views show of one run, read in one go through the run store
// (never the engine): the run, its ranks, the overlap analysis per rank and iteration,
// bucket timings, and the bucket assignment per rank. Plain data, no Qt.
#pragma once

#include <string>
#include <vector>

#include "overlap_analysis.h"
#include "run_store_reader.h"
#include "timeline_data.h"

namespace ddpscope::gui {

struct RunData {
  std::string path;
  probes::RunRow run;
  std::vector<probes::RankRow> ranks;
  probes::RunAnalysis analysis;
  std::vector<probes::BucketRow> buckets;  // every rank and generation
  std::vector<probes::ParamRow> params;    // every rank and generation
  int64_t span_count = 0;
  TimelineData timeline;
};

// Throws probes::RunStoreError (or ddpscope::Error) when the file cannot be read.
RunData load_run(const std::string& path);

}  // namespace ddpscope::gui
