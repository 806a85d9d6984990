#include "run_store_schema.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "event.h"
#include "span_pack.h"

namespace ddpscope::probes {
namespace {

// Names every span kind this build knows in `kinds` (each version adds its new ones).
void add_kind_names(SqliteDb& db) {
  Statement kind = db.prepare("INSERT OR IGNORE INTO kinds(kind, name) VALUES(?, ?)");
  for (int k = 0; k < kNumKinds; ++k) {
    kind.bind(1, int64_t{k}).bind(2, std::string(kind_name(static_cast<Kind>(k))));
    kind.step();
    kind.reset();
  }
}

// Version 1: the first schema. RUN_FILE.md describes the tables.
//
// `spans` has no per-row index: two B-tree indexes cut ingest from 1.4M to 0.32M rows/s
// here. Instead every batch adds rows to `span_blocks` (a block-range index): a block is
// a run of consecutive rowids from one rank and thread with its time range and a bit
// mask of the kinds in it. Queries by rank, time window and kind find their blocks
// through the small indexed table, then read rowid ranges of `spans`.
void create_version_1(SqliteDb& db) {
  db.exec(R"sql(
CREATE TABLE runs(run_id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, config_json TEXT,
  world_size INTEGER, backend TEXT, model TEXT, status TEXT NOT NULL, message TEXT,
  failed_rank INTEGER, ended_at TEXT, rejected_batches INTEGER NOT NULL DEFAULT 0);
CREATE TABLE ranks(rank INTEGER PRIMARY KEY, host TEXT, pid INTEGER, device TEXT,
  clock_offset_ns INTEGER NOT NULL DEFAULT 0, clock_rtt_ns INTEGER,
  events_received INTEGER NOT NULL DEFAULT 0, events_dropped INTEGER NOT NULL DEFAULT 0,
  batches_received INTEGER NOT NULL DEFAULT 0);
CREATE TABLE clock_samples(rank INTEGER NOT NULL, t_local_ns INTEGER NOT NULL,
  offset_ns INTEGER NOT NULL, rtt_ns INTEGER NOT NULL);
CREATE TABLE threads(rank INTEGER NOT NULL, thread INTEGER NOT NULL, tid INTEGER, name TEXT,
  PRIMARY KEY(rank, thread));
CREATE TABLE kinds(kind INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE names(name_id INTEGER PRIMARY KEY, name TEXT NOT NULL, file TEXT, line INTEGER,
  UNIQUE(name, file, line));
CREATE TABLE spans(rank INTEGER NOT NULL, thread INTEGER NOT NULL, kind INTEGER NOT NULL,
  name_id INTEGER NOT NULL, t_begin_ns INTEGER NOT NULL, t_end_ns INTEGER NOT NULL,
  iteration INTEGER, bucket INTEGER, param INTEGER, bytes INTEGER, peer INTEGER,
  seq INTEGER, ctx_id INTEGER, msg_id INTEGER);
CREATE TABLE span_blocks(rank INTEGER NOT NULL, thread INTEGER NOT NULL,
  first_rowid INTEGER NOT NULL, last_rowid INTEGER NOT NULL, t_min INTEGER NOT NULL,
  t_max INTEGER NOT NULL, kinds INTEGER NOT NULL);
CREATE INDEX span_blocks_by_rank_time ON span_blocks(rank, t_min);
CREATE TABLE params(rank INTEGER NOT NULL, generation INTEGER NOT NULL,
  param_index INTEGER NOT NULL, name TEXT, shape TEXT, numel INTEGER, dtype TEXT,
  bucket INTEGER, offset INTEGER, PRIMARY KEY(rank, generation, param_index));
CREATE TABLE buckets(rank INTEGER NOT NULL, generation INTEGER NOT NULL, bucket INTEGER NOT NULL,
  bytes INTEGER, num_params INTEGER, first_param INTEGER, last_param INTEGER, params TEXT,
  PRIMARY KEY(rank, generation, bucket));
CREATE TABLE graph_nodes(rank INTEGER NOT NULL, ctx_id INTEGER NOT NULL,
  iteration INTEGER NOT NULL, node_id INTEGER NOT NULL, op TEXT, kind TEXT, deps INTEGER,
  sequence_nr INTEGER, PRIMARY KEY(rank, ctx_id, iteration, node_id));
CREATE TABLE graph_edges(rank INTEGER NOT NULL, ctx_id INTEGER NOT NULL,
  iteration INTEGER NOT NULL, src INTEGER NOT NULL, dst INTEGER NOT NULL, input_nr INTEGER);
CREATE TABLE messages(ctx_id INTEGER, msg_id INTEGER, src_rank INTEGER, dst_rank INTEGER,
  kind TEXT, bytes INTEGER, t_send_ns INTEGER, t_recv_ns INTEGER);
CREATE TABLE metrics(rank INTEGER NOT NULL, iteration INTEGER, name TEXT NOT NULL, value REAL);
CREATE INDEX metrics_by_name ON metrics(name, rank, iteration);
)sql");
  add_kind_names(db);
}

// Version 2: RPC. Spans of RRef events carry rref_id and fork_id; `messages` gets one
// row per RPC message, joined from its rpc_send and rpc_recv spans as they arrive (the
// unique index is what finds the other half), with the function's name.
void create_version_2(SqliteDb& db) {
  db.exec(R"sql(
ALTER TABLE spans ADD COLUMN rref_id INTEGER;
ALTER TABLE spans ADD COLUMN fork_id INTEGER;
ALTER TABLE messages ADD COLUMN name TEXT;
CREATE UNIQUE INDEX messages_by_id ON messages(msg_id, kind);
)sql");
  add_kind_names(db);
}

// Version 3: distributed autograd. Send and recv nodes of a context's graph carry the
// autograd message id they share with their other end, and that end's worker, so a
// reader joins the graphs of all workers; two new kinds of instants.
void create_version_3(SqliteDb& db) {
  db.exec(R"sql(
ALTER TABLE graph_nodes ADD COLUMN msg_id INTEGER;
ALTER TABLE graph_nodes ADD COLUMN peer INTEGER;
)sql");
  add_kind_names(db);
}

// Version 4: the teaching view's events. Autograd nodes run in a distributed pass carry
// their context (ctx_id); dependency instants show each count falling. No new columns,
// one new kind.
void create_version_4(SqliteDb& db) { add_kind_names(db); }

// Version 5: runs imported from PyTorch profiler traces. Six new kinds (GPU kernels by
// HTA's classes, CUDA runtime calls, other trace operators) and each rank's clock
// uncertainty (an imported rank's offset is estimated from the collectives' ends).
void create_version_5(SqliteDb& db) {
  add_kind_names(db);
  db.exec("ALTER TABLE ranks ADD COLUMN clock_uncertainty_ns INTEGER;");
}

// Version 6: the flight recorder (flight_recorder.h). Each rank's records of its groups'
// collectives (one row per record, updated as its state moves on), the groups' members,
// the dumps ranks wrote on a timeout or a fatal signal, and the rank that mpirun saw die
// (as data: the hang analysis parses no message).
void create_version_6(SqliteDb& db) {
  db.exec(R"sql(
CREATE TABLE process_groups(rank INTEGER NOT NULL, pg_id INTEGER NOT NULL, name TEXT NOT NULL,
  description TEXT, ranks TEXT, PRIMARY KEY(rank, pg_id));
CREATE TABLE collectives(rank INTEGER NOT NULL, pg_id INTEGER NOT NULL, record_id INTEGER NOT NULL,
  pg_name TEXT NOT NULL, pg_desc TEXT, collective_seq INTEGER, p2p_seq INTEGER, op TEXT NOT NULL,
  profiling_name TEXT, input_sizes TEXT, output_sizes TEXT, input_dtypes TEXT, output_dtypes TEXT,
  state TEXT NOT NULL, t_created_ns INTEGER, t_started_ns INTEGER, t_completed_ns INTEGER,
  timeout_ms INTEGER, phase TEXT, iteration INTEGER, frames TEXT, source TEXT,
  PRIMARY KEY(rank, pg_id, record_id));
CREATE TABLE flight_dumps(rank INTEGER NOT NULL, t_ns INTEGER, reason TEXT, trigger TEXT, file TEXT, source TEXT,
  stall_ns INTEGER, stall_end_ns INTEGER);
ALTER TABLE runs ADD COLUMN dead_rank INTEGER;
ALTER TABLE runs ADD COLUMN dead_signal TEXT;
)sql");
  add_kind_names(db);
}

// Version 7: ZeRO. Each rank's record of the optimizer partition (the owner of each
// parameter, by the optimizer's index and the parameter's name) and one new kind,
// param_sync (the post-step broadcasts). Optimizer-state bytes are a metric
// (optimizer_state_bytes), so they need no table.
void create_version_7(SqliteDb& db) {
  db.exec(R"sql(
CREATE TABLE zero_shards(rank INTEGER NOT NULL, param INTEGER NOT NULL, name TEXT NOT NULL,
  numel INTEGER NOT NULL, owner INTEGER NOT NULL, PRIMARY KEY(rank, param));
)sql");
  add_kind_names(db);
}

// Version 8: spans in packs (span_pack.h). A pack holds up to 4096 consecutive spans of
// one rank and thread, compressed; its row keeps what queries select packs by (rank,
// time range, the kinds in it). Spans are numbered from 1 in the order they were
// written (their rowids before): pack first_id holds spans first_id .. first_id+count-1.
// The rows of an older file are packed here, block by block, ids kept; then `spans` and
// `span_blocks` go. SQL over spans still works through the `spans` virtual table
// (span_table.h), which the CLI, the app and the SQLite extension provide.
void create_version_8(SqliteDb& db) {
  db.exec(R"sql(
CREATE TABLE span_packs(first_id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, thread INTEGER NOT NULL,
  count INTEGER NOT NULL, t_min INTEGER NOT NULL, t_max INTEGER NOT NULL, kinds INTEGER NOT NULL,
  data BLOB NOT NULL);
CREATE INDEX span_packs_by_rank_time ON span_packs(rank, t_min);
)sql");
  Statement rows = db.prepare(
      "SELECT s.rowid, b.rank, b.thread, s.kind, s.name_id, s.t_begin_ns, s.t_end_ns, s.iteration, s.bucket, "
      "s.param, s.bytes, s.peer, s.seq, s.ctx_id, s.msg_id, s.rref_id, s.fork_id FROM span_blocks b CROSS JOIN "
      "spans s ON s.rowid BETWEEN b.first_rowid AND b.last_rowid ORDER BY b.first_rowid, s.rowid");
  Statement insert = db.prepare(
      "INSERT INTO span_packs(first_id, rank, thread, count, t_min, t_max, kinds, data) VALUES(?,?,?,?,?,?,?,?)");
  std::vector<PackedSpan> pack;
  int64_t first_id = 0, rank = 0, thread = 0, t_min = 0, t_max = 0, kinds = 0;
  auto flush = [&] {
    if (pack.empty()) return;
    const std::string blob = encode_pack(pack);
    insert.bind(1, first_id)
        .bind(2, rank)
        .bind(3, thread)
        .bind(4, static_cast<int64_t>(pack.size()))
        .bind(5, t_min)
        .bind(6, t_max)
        .bind(7, kinds)
        .bind_blob(8, blob.data(), blob.size());
    insert.step();
    insert.rewind();
    pack.clear();
  };
  while (rows.step()) {
    const int64_t id = rows.column_int64(0);
    // A new pack where the rank or thread changes, ids stop being consecutive, or it is full.
    if (pack.empty() || rows.column_int64(1) != rank || rows.column_int64(2) != thread ||
        id != first_id + static_cast<int64_t>(pack.size()) || pack.size() == 4096) {
      flush();
      first_id = id;
      rank = rows.column_int64(1);
      thread = rows.column_int64(2);
      t_min = std::numeric_limits<int64_t>::max();
      t_max = std::numeric_limits<int64_t>::min();
      kinds = 0;
    }
    PackedSpan s;
    s.kind = static_cast<int32_t>(rows.column_int64(3));
    s.name_id = static_cast<int32_t>(rows.column_int64(4));
    s.t_begin_ns = rows.column_int64(5);
    s.t_end_ns = rows.column_int64(6);
    int64_t* optional[] = {&s.iteration, &s.bucket, &s.param,  &s.bytes,   &s.peer,
                           &s.seq,       &s.ctx_id, &s.msg_id, &s.rref_id, &s.fork_id};
    for (int c = 0; c < 10; ++c)
      *optional[c] = rows.column_optional(7 + c);
    t_min = std::min(t_min, s.t_begin_ns);
    t_max = std::max(t_max, s.t_end_ns);
    kinds |= int64_t{1} << (s.kind & 63);
    pack.push_back(s);
  }
  flush();
  db.exec("DROP TABLE span_blocks; DROP TABLE spans;");
}

// Version 9: the ring allreduce's steps, one new kind (ring_step). No new table: a step
// is a span with its block numbers in param and bucket and its step in msg_id.
void create_version_9(SqliteDb& db) { add_kind_names(db); }

// Version 10: imported spans' arguments as their trace wrote them (a kernel's grid,
// block, stream and registers; an op's input dims and types; a collective's sizes), for
// the timeline's Details: one zstd blob per span pack that has any (args_pack.h), keyed
// like the pack by its first span's id. Spans of ddpscope's own probes have none.
void create_version_10(SqliteDb& db) {
  db.exec("CREATE TABLE span_args(first_id INTEGER PRIMARY KEY, count INTEGER NOT NULL, data BLOB NOT NULL);");
}

// Version 11: jobs another launcher starts (`ddpscope-cli collect`). Each rank's place as
// its launcher gave it (local_rank, node: NULL when the launcher says none) and one row
// per attempt of a rank: torchrun's elastic restarts start every rank again in the same
// run. An attempt's iterations continue the run's count (first_iteration), so analyses
// keyed by iteration never mix two attempts; joined_ns and ended_ns are on the run's
// clock; outcome is NULL while the attempt runs (or when it vanished without a word),
// else 'ended' or 'failed'.
void create_version_11(SqliteDb& db) {
  db.exec(R"sql(
ALTER TABLE ranks ADD COLUMN local_rank INTEGER;
ALTER TABLE ranks ADD COLUMN node INTEGER;
CREATE TABLE attempts(rank INTEGER NOT NULL, attempt INTEGER NOT NULL, host TEXT, pid INTEGER,
  launcher TEXT, joined_ns INTEGER, ended_ns INTEGER, outcome TEXT, first_iteration INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY(rank, attempt));
)sql");
}

// Version 12: where each rank's code stood, every thread's stack, captured when
// the rank made no progress for a while or a collective failed: one row a capture, its
// threads as JSON (in the order the rank gave them, the training thread first; each with
// its frames, innermost first, and how many outer frames of a deeper stack were left out).
// One table: a run without stacks grows by one page.
void create_version_12(SqliteDb& db) {
  db.exec(R"sql(
CREATE TABLE stacks(capture_id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, t_ns INTEGER NOT NULL, reason TEXT,
  stalled_ns INTEGER, iteration INTEGER, language TEXT NOT NULL, threads_json TEXT NOT NULL);
)sql");
}

// Version 13: when the job ended, on the run's clock (the collector's CLOCK_MONOTONIC), beside
// ended_at's wall time: a hung job stopped by hand then keeps how long its ranks had waited
// (they wait until the stop, not until their last event). NULL while running, in imports,
// and in files of older versions.
void create_version_13(SqliteDb& db) { db.exec("ALTER TABLE runs ADD COLUMN ended_ns INTEGER;"); }

// Version 14: each rank's process as the launcher saw it just before it ended a job (a
// timeout, a failure, the user's stop): its /proc state letter ('T' stopped by a signal, 't'
// by a debugger, 'S', 'R', 'D', 'Z'), or 'gone' (no such process). A rank stopped or gone
// then could not answer for its stack, and the finished run still says so. NULL: not
// recorded (a job that ended by itself, a rank on another host, an import).
void create_version_14(SqliteDb& db) { db.exec("ALTER TABLE ranks ADD COLUMN end_state TEXT;"); }

// Version 15: the links' measured ceiling (train --measure-links), one new kind (link_test):
// an exchange is a span on its sender, peer and bytes as a send's.
void create_version_15(SqliteDb& db) { add_kind_names(db); }

// Version 16: a failure typed, so that no reader decides from an error's words. The runs
// row keeps the collective the reporting rank's failure ended (failed_op "allreduce",
// failed_seq its number, failed_timed_out 1 when its wait ran out of time; NULL: the
// failure was not a collective's, or not typed), and one new kind (collective_failed): a
// PyTorch rank's failed collective, an instant with the same three facts.
void create_version_16(SqliteDb& db) {
  db.exec(
      "ALTER TABLE runs ADD COLUMN failed_op TEXT; ALTER TABLE runs ADD COLUMN failed_seq INTEGER; "
      "ALTER TABLE runs ADD COLUMN failed_timed_out INTEGER;");
  add_kind_names(db);
}

// migrations[v] takes a file from version v to v + 1.
const std::vector<std::function<void(SqliteDb&)>>& migrations() {
  static const std::vector<std::function<void(SqliteDb&)>> steps = {
      create_version_1,  create_version_2,  create_version_3,  create_version_4,  create_version_5,  create_version_6,
      create_version_7,  create_version_8,  create_version_9,  create_version_10, create_version_11, create_version_12,
      create_version_13, create_version_14, create_version_15, create_version_16};
  static_assert(kRunStoreSchemaVersion == 16, "add the migration step with the new version");
  return steps;
}

}  // namespace

bool is_empty_database(SqliteDb& db) {
  return db.query_int64("PRAGMA user_version") == 0 && db.query_int64("SELECT count(*) FROM sqlite_master") == 0;
}

int schema_version(SqliteDb& db) { return static_cast<int>(db.query_int64("PRAGMA user_version")); }

void create_or_migrate(SqliteDb& db) {
  int version = schema_version(db);
  if (version > kRunStoreSchemaVersion) {
    throw RunStoreError(
        detail::concat("run file '", db.path(), "' has schema version ", version, ", newer than this ddpscope writes (",
                       kRunStoreSchemaVersion, "); update ddpscope"),
        __FILE__, __LINE__);
  }
  if (version == 0 && db.query_int64("SELECT count(*) FROM sqlite_master") > 0) {
    throw RunStoreError(detail::concat("'", db.path(),
                                       "' is an SQLite database but not a ddpscope run file; "
                                       "choose another path for the run"),
                        __FILE__, __LINE__);
  }
  while (version < kRunStoreSchemaVersion) {
    db.exec("BEGIN IMMEDIATE");
    migrations()[static_cast<size_t>(version)](db);
    ++version;
    db.exec("PRAGMA user_version = " + std::to_string(version));
    db.exec("COMMIT");
  }
}

void check_readable(SqliteDb& db) {
  const int version = schema_version(db);  // fails on files that are not databases
  if (version > kRunStoreSchemaVersion) {
    throw RunStoreError(
        detail::concat("run file '", db.path(), "' was written by a newer ddpscope (schema ", version,
                       "; this build reads up to ", kRunStoreSchemaVersion, "); update ddpscope to open it"),
        __FILE__, __LINE__);
  }
  if (version == 0) {
    throw RunStoreError(detail::concat("'", db.path(), "' is not a ddpscope run file (no run-store schema)"), __FILE__,
                        __LINE__);
  }
}

}  // namespace ddpscope::probes
