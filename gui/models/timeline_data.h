// TimelineData: the spans of a run arranged for the timeline view: one lane per (rank,
// thread), spans sorted by begin time, instants kept apart. Plain data built from the
// run store; the view only paints it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "event.h"
#include "overlap_analysis.h"
#include "run_store_reader.h"

namespace ddpscope::gui {

struct TimelineSpan {
  int64_t begin_ns = 0, end_ns = 0;
  probes::Kind kind = probes::Kind::Mark;
  int32_t name = 0;  // index into TimelineData::names
  int64_t iteration = -1, bucket = -1, bytes = -1;
};

struct TimelineLane {
  int rank = 0;
  int thread = 0;
  std::string label;                // "rank 0 · compute"
  std::vector<TimelineSpan> spans;  // by begin time
  int64_t longest_ns = 0;           // the longest span: how far back a window must look
  std::vector<TimelineSpan> instants;
  std::vector<probes::Interval> exposed;  // the rank's exposed communication, by time
  // Level of detail: per block of kBlock spans (in `spans` order), the latest end and the
  // kinds present. A view zoomed out far enough that a block ends within one pixel
  // column draws the block as one mark per kind instead of visiting its spans.
  static constexpr size_t kBlock = 64;
  std::vector<int64_t> block_max_end;
  std::vector<uint32_t> block_kinds;  // bit k: a span of probes::Kind k
};

// A link across lanes: an RPC message from its send to its receive, or one DDP bucket
// allreduce (one sequence number) from each rank's start to the next rank's, so a late
// rank shows as a slanted line.
struct TimelineFlow {
  enum class Kind : uint8_t { Message, Collective };
  int64_t from_ns = 0, to_ns = 0;
  uint32_t from_lane = 0, to_lane = 0;
  Kind kind = Kind::Message;
};

// A span that may be one end of a flow, kept to pair ends that arrive in later loads.
struct FlowEnd {
  int32_t rank = 0, thread = 0;
  int64_t t_ns = 0;
  int64_t key = 0;     // the message id, or the allreduce's sequence number
  int32_t param = -1;  // messages: the wire kind (a request and its answer share an id)
  probes::Kind kind = probes::Kind::Mark;  // RpcSend, RpcRecv or Allreduce
};

struct TimelineData {
  std::vector<TimelineLane> lanes;  // by rank, then thread
  std::vector<std::string> names;   // by the run file's name_id

  const std::string& name_of(int32_t id) const {
    static const std::string unknown = "?";
    return id >= 0 && static_cast<size_t>(id) < names.size() ? names[static_cast<size_t>(id)]
                                                             : unknown;
  }
  int64_t begin_ns = 0, end_ns = 0;
  // Begin and end of each iteration of rank 0 (for fit and next/previous).
  std::vector<std::pair<int64_t, int64_t>> iterations;
  int64_t last_rowid = 0;  // the last span read: extend_timeline resumes after it
  std::vector<FlowEnd> flow_ends;
  std::vector<TimelineFlow> flows;  // by the earlier of their two times
  int64_t longest_flow_ns = 0;      // how far back a window must look for flows

  // The span of `lane` under time `t_ns`, or null; spans are searched from the
  // innermost (latest-starting) one.
  const TimelineSpan* spanAt(size_t lane, int64_t t_ns, int64_t slack_ns = 0) const;
};

// Throws probes::RunStoreError when the run cannot be read.
TimelineData load_timeline(probes::RunStoreReader& run);
// Adds the spans written since `data` was read (a growing run): only the new rows are
// read, then merged into their lanes by time.
void extend_timeline(TimelineData& data, probes::RunStoreReader& run);
// Copies each rank's exposed-communication intervals onto its lanes.
void mark_exposed(TimelineData& data, const probes::RunAnalysis& analysis);

}  // namespace ddpscope::gui
