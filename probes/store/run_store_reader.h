// RunStoreReader: read access to a run file for the CLI, the benchmarks and the desktop
// app. Opens the file read-only (it may still be growing: WAL lets the writer go on),
// refuses files that are not run files or come from a newer schema, and turns a
// damaged file into a RunStoreError rather than a crash.
//
//   RunStoreReader run("run.ddprun");
//   for (const SpanRow& s : run.spans({.kinds = {Kind::Allreduce}, .rank = 0})) ...
//
// Thread-safety: one reader per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "event.h"
#include "flight_records.h"
#include "run_end.h"
#include "span_pack.h"
#include "sqlite_db.h"

namespace ddpscope::probes {

struct RunRow {
  std::string created_at, config_json, backend, model, status, message, ended_at;
  int world_size = 0;
  int failed_rank = -1;
  int64_t rejected_batches = 0;
  int dead_rank = -1;       // a rank mpirun saw die by a signal (schema 6; -1: none)
  std::string dead_signal;  // "signal 9, Killed"
  int schema = 0;           // the file's schema version
  int64_t ended_ns = -1;    // when the job ended, on the run's clock (schema 13; -1: not known)
  FailedCollective failed;  // the collective failed_rank's failure ended (schema 16; run_end.h)
  // A job stopped or failed before its end: its ranks waited until it ended, not until
  // their last event (-1 when it did not, or the file does not say).
  int64_t unfinished_end_ns() const { return status == "stopped" || status == "failed" ? ended_ns : -1; }
};

struct RankRow {
  int rank = 0;
  std::string host, device;
  int64_t pid = 0;
  int64_t clock_offset_ns = 0, clock_rtt_ns = -1;
  int64_t events_received = 0, events_dropped = 0, batches_received = 0;
  int local_rank = -1, node = -1;  // as the rank's launcher placed it (schema 11; -1: not said)
  // Its process when the launcher ended the job (schema 14): a /proc state letter, or
  // "gone"; empty when not recorded.
  std::string end_state;
};

// One attempt of a rank (schema 11): torchrun's elastic restarts start every rank again
// in the same run, attempt 1, 2, ... (the restart count); a rank's only attempt is 0.
struct AttemptRow {
  int rank = 0;
  int attempt = 0;
  std::string host, launcher;
  int64_t pid = -1;
  int64_t joined_ns = -1, ended_ns = -1;  // on the run's clock; -1: not known (yet)
  std::string outcome;                    // "ended", "failed"; "" while running or never said
  int64_t first_iteration = 1;            // its iterations are numbered from here in the run
};

// Where a rank's code stood (schema 12): every thread's stack at one moment, as the rank
// captured it (a stall, a failed collective). Frames (flight_records.h) innermost first.
struct ThreadStack {
  int64_t tid = -1;
  std::string name;
  std::vector<StackFrame> frames;
  int64_t omitted = 0;   // frames of a deeper stack left out (the outermost ones)
  bool answered = true;  // false: a native thread that never ran the capture's handler
  bool native = false;   // a native rank's (the capture's language), not a Python one's
};
struct StackCapture {
  int rank = 0;
  int64_t t_ns = 0;                  // on the run's clock
  int64_t stalled_ns = 0;            // how long the rank had made no progress (0: not a stall)
  int64_t iteration = -1;            // the rank's iteration then (-1: not said)
  std::string reason, language;      // language: "python" or "native"
  std::vector<ThreadStack> threads;  // the training thread first
};

struct ThreadRow {
  int rank = 0;
  int thread = 0;
  int64_t tid = 0;
  std::string name;
};

struct SpanRow {
  int rank = 0;
  int thread = 0;
  Kind kind = Kind::Mark;
  std::string name;
  std::string file;  // the call site that recorded it, relative to the source tree
  int64_t line = 0;
  int64_t t_begin_ns = 0, t_end_ns = 0;
  int64_t iteration = -1, bucket = -1, param = -1, bytes = -1, peer = -1;
  int64_t seq = -1, ctx_id = -1, msg_id = -1;
  bool ended_by_error = false;  // cut short by an exception (kEndedByError; schema 8)
};

struct SpanQuery {
  int64_t t_begin_ns = std::numeric_limits<int64_t>::min();  // spans overlapping the window
  int64_t t_end_ns = std::numeric_limits<int64_t>::max();
  std::vector<Kind> kinds;  // empty: all
  int rank = -1;            // -1: all
  int64_t iteration = -1;   // -1: all
  int64_t limit = 0;        // 0: no limit
};

struct BucketRow {
  int rank = 0, generation = 0, bucket = 0;
  int64_t bytes = 0;
  std::vector<int64_t> params;
};

struct ParamRow {
  int rank = 0, generation = 0, index = 0;
  std::string name, shape, dtype;
  int64_t numel = 0, bucket = -1, offset = 0;
};

// ZeRO's partition as one rank recorded it (schema 7).
struct ShardRow {
  int rank = 0, param = 0, owner = 0;
  std::string name;
  int64_t numel = 0;
};

struct GraphNodeRow {
  int64_t id = 0;
  std::string op, kind;
  int64_t deps = 0, sequence_nr = 0;
  int64_t msg_id = -1;  // send/recv: autograd message id shared with the other end
  int peer = -1;        // send/recv: the other end's worker
};
struct GraphEdgeRow {
  int64_t src = 0, dst = 0, input_nr = 0;
};
struct GraphRows {
  int rank = 0;
  int64_t ctx_id = -1, iteration = -1;
  std::vector<GraphNodeRow> nodes;
  std::vector<GraphEdgeRow> edges;
};

struct MetricRow {
  int rank = 0;
  int64_t iteration = -1;
  std::string name;
  double value = 0;
};

// One RPC message, its send joined to its receive (t_send_ns or t_recv_ns -1 while the
// other half has not arrived, or when that rank recorded nothing).
struct MessageRow {
  int64_t ctx_id = -1;
  int64_t msg_id = 0;
  int src_rank = -1, dst_rank = -1;
  std::string kind;  // call, response, error, remote_call, rref_fetch, ... (RUN_FILE.md)
  std::string name;  // the function, or the RRef message's kind
  int64_t bytes = 0;
  int64_t t_send_ns = -1, t_recv_ns = -1;
};

// A span without its strings: for the views that load every span of a run (1M spans
// must open in well under a second). name_id indexes names().
struct CompactSpan {
  int64_t rowid = 0;  // grows with every span written: where an incremental read resumes
  int32_t rank = 0, thread = 0;
  Kind kind = Kind::Mark;
  int32_t name_id = 0;
  int64_t t_begin_ns = 0, t_end_ns = 0;
  int64_t iteration = -1, bucket = -1, param = -1, bytes = -1, seq = -1;
  int64_t msg_id = -1;          // RPC kinds: the message id
  bool ended_by_error = false;  // cut short by an exception (kEndedByError; schema 8)
};

// A time window: spans that overlap [begin_ns, end_ns]; the default holds every span.
struct TimeWindow {
  int64_t begin_ns = std::numeric_limits<int64_t>::min();
  int64_t end_ns = std::numeric_limits<int64_t>::max();
  bool everything() const { return *this == TimeWindow{}; }
  bool operator==(const TimeWindow&) const = default;
};

// Where a span pack lies and what it holds, without its spans: enough to know how many
// spans a time window would load before loading them.
struct PackExtent {
  int64_t t_min = 0, t_max = 0;
  int64_t count = 0;
  bool detail = false;  // holds detail kinds (event.h's kDetailKindMask)
};

// Spans one at a time, from span packs (schema 8) or the rows of an older file.
class SpanScan {
 public:
  bool next(CompactSpan& c);
  // Packs decoded so far (what a filter saved shows here).
  int64_t packs_read() const { return packs_read_; }

 private:
  friend class RunStoreReader;
  Statement rows_;
  bool packed_ = true;
  uint64_t kinds_ = 0;  // 0: all
  int64_t after_ = 0;
  TimeWindow window_;
  std::string path_;
  std::vector<PackedSpan> pack_;
  size_t at_ = 0;
  int64_t first_id_ = 0;
  int32_t rank_ = 0, thread_ = 0;
  int64_t packs_read_ = 0;
};

// The most spans a run file of `file_bytes` may hold: one per kMinBytesPerSpan bytes (and
// 4,096 in any file). ddpscope's own runs take 5 to 80 bytes a span (synthetic, perfectly
// regular runs 8, PyTorch traces imported 5 and more); a file that claims more is refused when opened, and the importer
// refuses traces that would pack denser.
inline constexpr int64_t kMinBytesPerSpan = 2;
int64_t max_spans_for_file(int64_t file_bytes);

class RunStoreReader {
 public:
  // A name as the names table holds it: the name and the call site that recorded it.
  struct Site {
    std::string name, file;
    int64_t line = 0;
  };
  explicit RunStoreReader(const std::string& path);

  RunRow run();
  // Writes a compacted copy of the whole file to `dest` (SQLite's VACUUM INTO), through
  // this connection: it works after the file was deleted, as long as the reader is open.
  // Throws RunStoreError when `dest` exists or cannot be written.
  void save_copy(const std::string& dest);
  std::vector<RankRow> ranks();
  // By rank, then attempt (run_store_attempts.cpp); empty before schema 11 and for jobs
  // whose ranks say no placement (ddpscope's own trainer).
  std::vector<AttemptRow> attempts();
  std::vector<ThreadRow> threads();
  // Every stack capture, by rank then time (run_store_stacks.cpp); empty before schema 12.
  std::vector<StackCapture> stacks();
  std::vector<SpanRow> spans(const SpanQuery& query = {});
  // The same spans one at a time, in file order (per rank and thread, nearly by time),
  // with no more than one pack in memory: for exports of a whole run. `limit` is ignored.
  void each_span_row(const SpanQuery& query, const std::function<void(const SpanRow&)>& fn);
  int64_t span_count();
  // Every span in file order (per rank and thread, nearly by time), without names;
  // only `kinds` (all when empty), one rank (all when -1), rows after `after_rowid`,
  // spans that overlap `window` (packs outside it are not read).
  template <typename Fn>
  void for_each_span(Fn&& fn, const std::vector<Kind>& kinds = {}, int rank = -1, int64_t after_rowid = 0,
                     TimeWindow window = {}) {
    SpanScan scan = scan_spans(kinds, rank, after_rowid, window);
    CompactSpan c;
    while (scan.next(c))
      fn(c);
  }
  // The same as a scan to pull from.
  SpanScan scan_spans(const std::vector<Kind>& kinds = {}, int rank = -1, int64_t after_rowid = 0,
                      TimeWindow window = {});
  // Every span pack's extent, by first span (empty for an older file, which has none).
  std::vector<PackExtent> pack_extents();
  // Span names by name_id (ids without a name are empty).
  std::vector<std::string> names();
  // One name by its id ("" when the file has none of that id): what a selected span needs,
  // without reading every name.
  std::string name(int64_t name_id);
  // Earliest begin and latest end over all spans ({0, 0} without spans).
  std::pair<int64_t, int64_t> time_range();
  // generation -1: every generation.
  std::vector<BucketRow> buckets(int rank, int generation = -1);
  std::vector<ParamRow> params(int rank, int generation = -1);
  // The ZeRO partition rank `rank` recorded, by parameter index (empty: no ZeRO, or a
  // file older than schema 7).
  std::vector<ShardRow> zero_shards(int rank);
  // The graph recorded for (rank, ctx_id) at the earliest iteration >= `iteration`;
  // empty nodes when none.
  GraphRows graph(int rank, int64_t ctx_id = -1, int64_t iteration = -1);
  // Every (rank, ctx_id, iteration) with a recorded graph, distributed contexts first
  // by id; iteration is the pass for a context's graphs.
  std::vector<GraphRows> graph_index();
  std::vector<MetricRow> metrics(const std::string& name = {}, int rank = -1);
  // RPC messages by send time (those never sent last); ctx_id -2: all, -1: outside any
  // distributed autograd context, else that context's.
  std::vector<MessageRow> messages(int64_t ctx_id = -2);
  // The flight recorder's records (schema 6; empty before), each rank's in record order,
  // with those of dumps still beside the file (RUN.fr_rank_<R>.json, not merged yet:
  // the job's collector was gone when they were written) folded in, a later state
  // winning.
  FlightData flight();
  // The arguments an imported span's trace gave it (a JSON object; schema 10), by the
  // span's id; "" when it has none (every span of ddpscope's own probes).
  std::string span_args(int64_t span_id);
  // The span with that id as the run file holds it, with its rank and thread; nullopt
  // when there is none (schema 8 on: ids are the packs' first_id + index).
  struct StoredSpan {
    int rank = 0, thread = 0;
    PackedSpan span;
  };
  std::optional<StoredSpan> span_by_id(int64_t span_id);
  // PRAGMA integrity_check's verdict ("ok" when sound).
  std::string integrity_check();
  const std::string& path() const { return db_.path(); }

  // Spans in packs (schema 8 and later); false: rows of an older file, read as they are.
  bool packed() const { return packed_; }

 private:
  std::vector<SpanRow> row_spans(const SpanQuery& query);  // an older file's rows
  void check_span_count();
  void walk_packs(const SpanQuery& q, const std::function<void(int64_t, int32_t, int32_t, const PackedSpan&)>& fn);
  std::vector<Site> sites();

  SqliteDb db_;
  bool packed_ = true;
};

}  // namespace ddpscope::probes
