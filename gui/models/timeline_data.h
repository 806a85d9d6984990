// TimelineData: the spans of a run arranged for the timeline view: one lane per (rank,
// thread), spans sorted by begin time and given rows that never overlap, instants kept
// apart, unfinished process-group ops found. Plain data built from the
// run store; the view only paints it.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "event.h"
#include "overlap_analysis.h"
#include "run_store_reader.h"

namespace ddpscope::gui {

// 48 bytes: a 100M-span run's structure is 7.7M of them, held once for the whole run and
// once more with a window's detail (64 bytes took that to 1.6 GiB at its peak). The
// narrow fields hold what the probes record: buckets are int16 there; a parameter index
// past 2^22 and a run past 2^40 spans read as unknown (-1) and 0.
struct TimelineSpan {
  int64_t begin_ns = 0, end_ns = 0;
  int64_t bytes = -1;
  int64_t rowid : 40 = 0;  // the span's row in the run file (0: none, an unfinished op)
  int64_t bucket : 16 = -1;
  // The row of its lane it is drawn in: spans nested in an enclosing one (forward in an
  // iteration, autograd nodes in backward) one row below it; spans that outlive the one
  // they started in (a bucket's allreduce launched during backward) in rows of their own
  // below the nested ones. No two spans of one row overlap in time.
  uint64_t row : 8 = 0;
  int32_t seq = -1;  // a collective's number in its group
  int32_t name = 0;  // index into TimelineData::names
  int32_t iteration = -1;
  int32_t param : 23 = -1;
  // Its scope was unwound by an error (a collective's timeout): it did not complete
  // there; drawn hatched, cut off at its red right edge.
  bool cut_short : 1 = false;
  probes::Kind kind : 8 = probes::Kind::Mark;
};
static_assert(sizeof(TimelineSpan) == 48);

struct TimelineLane {
  int rank = 0;
  int thread = 0;
  std::string label;                // "rank 0 · compute"
  std::string thread_name;          // "compute"
  std::vector<TimelineSpan> spans;  // by begin time
  int64_t longest_ns = 0;           // the longest span: how far back a window must look
  std::vector<TimelineSpan> instants;
  // Process-group ops started and never finished (a PgOpStart with no PgOp of its
  // sequence number): drawn open from their start to the end of the run, each in a row
  // of its own below the lane's other rows. rowid is 0.
  std::vector<TimelineSpan> open;
  int rows = 1;                           // rows the lane needs: spans' rows, then one per open op
  std::vector<probes::Interval> exposed;  // the rank's exposed communication, by time
  // Level of detail: per block of kBlock spans (in `spans` order), the latest end and,
  // per row, the kind of a span there (kNoKind: none). A view zoomed out far enough
  // that a block ends within one pixel column draws the block as one mark per row
  // instead of visiting its spans.
  static constexpr size_t kBlock = 64;
  static constexpr int kLodRows = 16;
  static constexpr uint8_t kNoKind = 0xff;
  std::vector<int64_t> block_max_end;
  std::vector<std::array<uint8_t, kLodRows>> block_row_kinds;
};

// Rank 0's iteration spans: for fit, next/previous and the ruler's iteration band.
struct TimelineIteration {
  int64_t first = 0, second = 0;  // begin and end
  int64_t number = -1;            // the iteration's number in the run
  bool operator<(const TimelineIteration& o) const { return first < o.first; }
  bool operator==(const TimelineIteration&) const = default;
};

// A link across lanes: an RPC message from its send to its receive, or one DDP bucket
// allreduce (one sequence number) from each rank's start to the next rank's, so a late
// rank shows as a slanted line.
struct TimelineFlow {
  // Launch: an imported trace's CUDA launch (cudaLaunchKernel, ...) to the GPU work it
  // started, joined by the trace's correlation id.
  enum class Kind : uint8_t { Message, Collective, Launch };
  int64_t from_ns = 0, to_ns = 0;
  uint32_t from_lane = 0, to_lane = 0;
  Kind kind = Kind::Message;
};

// The flows of a timeline, shared by its copies until one changes them (a big run's
// window of detail is added to a copy of its structure: 3M collective links at 100M
// spans stay one vector). Reads as a const vector; edit() copies first when shared.
class SharedFlows {
 public:
  using const_iterator = std::vector<TimelineFlow>::const_iterator;
  size_t size() const { return m_flows ? m_flows->size() : 0; }
  bool empty() const { return size() == 0; }
  const TimelineFlow& operator[](size_t i) const { return (*m_flows)[i]; }
  const_iterator begin() const { return m_flows ? m_flows->cbegin() : const_iterator(); }
  const_iterator end() const { return m_flows ? m_flows->cend() : const_iterator(); }
  std::vector<TimelineFlow>& edit() {
    if (!m_flows)
      m_flows = std::make_shared<std::vector<TimelineFlow>>();
    else if (m_flows.use_count() > 1)
      m_flows = std::make_shared<std::vector<TimelineFlow>>(*m_flows);
    return *m_flows;
  }

 private:
  std::shared_ptr<std::vector<TimelineFlow>> m_flows;
};

// A span that may be one end of a flow, kept to pair ends that arrive in later loads.
struct FlowEnd {
  int32_t rank = 0, thread = 0;
  int64_t t_ns = 0;
  int64_t key = 0;                         // the message id, the allreduce's sequence number, or the correlation id
  int32_t param = -1;                      // messages: the wire kind (a request and its answer share an id)
  probes::Kind kind = probes::Kind::Mark;  // RpcSend, RpcRecv, Allreduce, CudaRuntime or a GPU kind
};

// One thing drawn on the timeline: a span, an instant or an open op of a lane.
struct SpanRef {
  enum class In : uint8_t { Spans, Instants, Open };
  int lane = -1;
  int64_t index = -1;
  In in = In::Spans;
  bool valid() const { return lane >= 0 && index >= 0; }
  bool operator==(const SpanRef&) const = default;
};

struct TimelineData {
  std::vector<TimelineLane> lanes;  // by rank, compute first, then by thread
  std::vector<std::string> names;   // by the run file's name_id

  const std::string& nameOf(int32_t id) const {
    static const std::string unknown = "?";
    return id >= 0 && static_cast<size_t>(id) < names.size() ? names[static_cast<size_t>(id)] : unknown;
  }
  int64_t begin_ns = 0, end_ns = 0;
  std::vector<TimelineIteration> iterations;               // by begin
  std::map<std::pair<int, int>, std::string> param_names;  // (rank, parameter index)
  uint64_t kinds_present = 0;                              // bit k: a span or instant of probes::Kind k
  bool cut_short_present = false;                          // a span an error cut short (the legend says so)
  int world_size = 0;  // the job's ranks (more than the lanes' when the run holds some ranks' traces)
  // The ring's measured ceiling (train --measure-links), which Details reads a collective's
  // bus bandwidth against; NaN: not measured.
  double link_ceiling_gbps = std::numeric_limits<double>::quiet_NaN();
  int64_t last_rowid = 0;  // the last span read: extendTimeline resumes after it
  std::vector<FlowEnd> flow_ends;
  std::set<std::tuple<int, int32_t, int64_t>> finished_ops;  // PgOp spans' (rank, name, seq)
  SharedFlows flows;                                         // by the earlier of their two times
  int64_t longest_flow_ns = 0;                               // how far back a window must look for flows
  uint8_t flow_kinds_present = 0;                            // bit k: a flow of TimelineFlow::Kind k (the legend)
  // The detail kinds (event.h's kDetailKindMask: autograd nodes, gradient ticks, copies,
  // kernels) held: all of them (has_detail, an everything() window), those of one window,
  // or none (a big run's structure, what a whole-run view draws).
  bool has_detail = true;
  probes::TimeWindow detail_window;

  // The span of `lane` under time `t_ns`, or null; spans are searched from the
  // innermost (latest-starting) one. With `row` >= 0, only spans drawn in that row
  // (open ops included).
  const TimelineSpan* spanAt(size_t lane, int64_t t_ns, int64_t slack_ns = 0, int row = -1) const;
  // The process-group op of `rank` (finished or still open) that overlaps [begin_ns, end_ns]
  // the most: the span of a collective a flight record's times name. Invalid when none.
  SpanRef opOverlapping(int rank, int64_t begin_ns, int64_t end_ns) const;
  // The span `ref` names, or null when it names none.
  const TimelineSpan* resolve(const SpanRef& ref) const;
  // The reference of a span of lane `lane` (a pointer into its spans, instants or open).
  SpanRef refOf(size_t lane, const TimelineSpan* span) const;
};

// Throws probes::RunStoreError when the run cannot be read.
TimelineData loadTimeline(probes::RunStoreReader& run);
// The structure alone (every kind but the detail kinds): a big run's first frame.
TimelineData loadTimelineStructure(probes::RunStoreReader& run);
// `structure` (from loadTimelineStructure) with the detail spans that overlap `window`.
TimelineData withDetail(const TimelineData& structure, probes::RunStoreReader& run, probes::TimeWindow window);
// Adds the spans written since `data` was read (a growing run): only the new rows are
// read, then merged into their lanes by time.
void extendTimeline(TimelineData& data, probes::RunStoreReader& run);
// Copies each rank's exposed-communication intervals onto its lanes.
void markExposed(TimelineData& data, const probes::RunAnalysis& analysis);

}  // namespace ddpscope::gui
