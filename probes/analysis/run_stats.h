// The JSON summary of a run that `ddpscope-cli stats` prints: the run, its ranks, per
// rank and iteration the times of overlap_analysis.h, the buckets with bytes and
// timings, and per rank means over the iterations after the first (warm-up).
#pragma once

#include <nlohmann/json.hpp>

#include "run_store_reader.h"

namespace ddpscope::probes {

// Keys in reading order: run, ranks, summary, cut_short (iterations an error cut short,
// left out of the summary and the iterations: rank, iteration, until_error_ms),
// iterations, buckets, stragglers, gpu (gpu_time.h; null without GPU kernels), nonfinite,
// rejected.
nlohmann::ordered_json run_stats_json(RunStoreReader& run);
// The first loss and the first gradient that were not finite ({"loss": {iteration, rank,
// value}, "gradient": {iteration, rank, parameter}}, either null), or null when none was.
// What was refused at the run's doors: the collector's rejected batches and each RPC
// agent's messages without the job's token or malformed (by rank where any).
nlohmann::ordered_json rejected_json(RunStoreReader& run);
nlohmann::ordered_json first_nonfinite_json(RunStoreReader& run);

}  // namespace ddpscope::probes
