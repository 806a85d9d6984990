// RunData: what the views show of one run, read in one go through the run store
// (never the engine): the run, its ranks, the overlap analysis per rank and iteration,
// bucket timings, the bucket assignment per rank, per-iteration metrics, where each rank
// stands (the hang analysis) and the recorded autograd graph. Plain data, no Qt.
#pragma once

#include <string>
#include <vector>

#include "gpu_time.h"
#include "graph_data.h"
#include "hang_analysis.h"
#include "link_matrix.h"
#include "overlap_analysis.h"
#include "run_stats.h"
#include "rank_attendance.h"
#include "run_store_reader.h"
#include "sequence_data.h"
#include "slow_cause.h"
#include "timeline_data.h"

namespace ddpscope::gui {

struct RunData {
  std::string path;
  probes::RunRow run;
  std::vector<probes::RankRow> ranks;
  probes::RankAttendance attendance;  // who came and how often (a collected job's ranks)
  probes::RunAnalysis analysis;
  probes::SlowCause cause;   // why the iterations are slow: the verdict every page shows
  probes::LinkReport links;  // bytes and rates between ranks and hosts, the slow link (the Links tab)
  // "The job is network-bound: ..." (network_bound.h) for a finished run whose links were
  // measured, none slow, and whose collectives ran near their ceiling; empty otherwise.
  std::string network_bound;
  // Live: the same over the last kRecentIterations finished iterations (is a rank slow now?).
  static constexpr int kRecentIterations = 3;
  probes::SlowCause recent_cause;
  probes::GpuTimeBreakdown gpu;            // imported PyTorch traces with GPU rows; else empty
  std::vector<probes::BucketRow> buckets;  // every rank and generation
  std::vector<probes::ParamRow> params;    // every rank and generation
  std::vector<probes::MetricRow> metrics;  // loss, samples_per_s, iteration_ms per rank
  // ZeRO's partition (the first rank's record: every rank records the same); empty
  // without ZeRO.
  std::vector<probes::ShardRow> zero_shards;
  probes::HangReport hang;               // empty when loaded without it
  GraphData graph;                       // rank 0's first recorded graph
  std::vector<GraphChoice> dist_graphs;  // every distributed pass recorded, with its workers
  SequenceData sequence;                 // the RPC messages (the send/recv view)
  int64_t span_count = 0;
  TimelineData timeline;
  // A finished run of more than detailAtOpen() spans opens with its structure alone
  // (timeline.has_detail false); the timeline then loads the detail of the window shown
  // (TimelineDetailLoader), estimated from the packs' extents kept here.
  static constexpr int64_t kDetailAtOpen = 3'000'000;
  std::vector<probes::PackExtent> packs;
  // Where the loss or a gradient first stopped being finite, as a sentence; empty when
  // every value was finite.
  std::string nonfinite;
  int64_t nonfinite_loss_iteration = -1;  // the first iteration whose loss was not finite
  // What was refused at the run's doors, as a sentence (collector batches, RPC messages
  // without the job's token or malformed, by rank); empty when nothing was.
  std::string rejected;
};

// Bytes of optimizer state each rank held at its last recorded iteration (the
// optimizer_state_bytes metric), as (rank, bytes) by rank; empty for runs without it.
std::vector<std::pair<int, int64_t>> optimizerStateBytes(const RunData& run);

// Spans above which a finished run opens with its structure first: $DDPSCOPE_DETAIL_AT_OPEN
// when it is a positive number, else RunData::kDetailAtOpen.
int64_t detailAtOpen();

// Per rank: its optimizer-state bytes and, under ZeRO, the parameters it owns.
struct OptimizerStateRow {
  int rank = 0;
  int64_t bytes = 0;
  int owned_parameters = 0;
  int64_t owned_elements = 0;
};
std::vector<OptimizerStateRow> optimizerStateRows(const RunData& run);

// The sentence of RunData::rejected for probes::rejected_json's value.
std::string describeRejected(const nlohmann::ordered_json& rejected);

// The sentence of RunData::nonfinite for probes::first_nonfinite_json's value.
std::string describeNonfinite(const nlohmann::ordered_json& first);

// now_ns: CLOCK_MONOTONIC now on the collector's host for a live run (the hang
// analysis measures ages from it); 0 for a file. Throws probes::RunStoreError (or
// ddpscope::Error) when the file cannot be read.
// With `previous` (an earlier load of the same growing file), only the spans written
// since are read for the timeline and the overlap analysis. Without `with_hang` the
// hang analysis is left empty (live reloads skip it until it is needed).
RunData loadRun(const std::string& path, int64_t now_ns = 0, const RunData* previous = nullptr, bool with_hang = true);

}  // namespace ddpscope::gui
