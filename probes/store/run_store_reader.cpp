#include "run_store_reader.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "args_pack.h"
#include "run_store_schema.h"
#include "span_table.h"

namespace ddpscope::probes {

constexpr int64_t kMaxRowNameBytes = int64_t{256} << 20;  // the names one spans() call copies

int64_t max_spans_for_file(int64_t file_bytes) { return std::max<int64_t>(file_bytes, 0) / kMinBytesPerSpan + 4096; }

RunStoreReader::RunStoreReader(const std::string& path) : db_(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX) {
  check_readable(db_);
  packed_ = schema_version(db_) >= 8;
  if (packed_) check_span_count();
  register_span_table(db_.handle());  // SQL over spans, whatever the layout (span_table.h)
}

// Span packs are compressed, and zstd writes a run of zeros four bytes a block: a 10 MB
// file could claim 10^10 spans, and every view that reads a whole run would try to hold
// them. The count a file may claim follows its size (the file and its write-ahead log).
void RunStoreReader::check_span_count() {
  std::error_code ec;
  int64_t bytes = static_cast<int64_t>(std::filesystem::file_size(db_.path(), ec));
  if (ec) bytes = 0;
  const auto wal = std::filesystem::file_size(db_.path() + "-wal", ec);
  if (!ec) bytes += static_cast<int64_t>(wal);
  const int64_t spans = db_.query_int64("SELECT coalesce(sum(count), 0) FROM span_packs");
  if (spans <= max_spans_for_file(bytes)) return;
  throw RunStoreError(detail::concat("run file '", db_.path(), "' claims ", spans, " spans in ", bytes,
                                     " bytes, more than one span per ", kMinBytesPerSpan,
                                     " bytes (ddpscope's runs take 5 to 80 bytes a span): it is damaged, "
                                     "or was made to exhaust memory; not opened"),
                      __FILE__, __LINE__);
}

RunRow RunStoreReader::run() {
  Statement s = db_.prepare(
      "SELECT created_at, config_json, world_size, backend, model, status, message, failed_rank, "
      "ended_at, rejected_batches FROM runs WHERE run_id = 1");
  RunRow r;
  if (!s.step()) {
    throw RunStoreError(detail::concat("run file '", db_.path(), "' has no run in it"), __FILE__, __LINE__);
  }
  r.created_at = s.column_text(0);
  r.config_json = s.column_text(1);
  r.world_size = static_cast<int>(s.column_int64(2));
  r.backend = s.column_text(3);
  r.model = s.column_text(4);
  r.status = s.column_text(5);
  r.message = s.column_text(6);
  r.failed_rank = static_cast<int>(s.column_optional(7));
  r.ended_at = s.column_text(8);
  r.rejected_batches = s.column_int64(9);
  r.schema = schema_version(db_);
  if (r.schema >= 6) {
    Statement d = db_.prepare("SELECT dead_rank, dead_signal FROM runs WHERE run_id = 1");
    if (d.step()) {
      r.dead_rank = static_cast<int>(d.column_optional(0));
      r.dead_signal = d.column_text(1);
    }
  }
  if (r.schema >= 13) {
    Statement e = db_.prepare("SELECT ended_ns FROM runs WHERE run_id = 1");
    if (e.step()) r.ended_ns = e.column_optional(0);
  }
  if (r.schema >= 16) {
    Statement f = db_.prepare("SELECT failed_op, failed_seq, failed_timed_out FROM runs WHERE run_id = 1");
    if (f.step()) r.failed = {f.column_text(0), f.column_optional(1), f.column_optional(2) == 1};
  }
  return r;
}

namespace {

// The process groups each rank described (schema 6).
void read_flight_groups(SqliteDb& db, FlightData& data) {
  Statement g = db.prepare("SELECT rank, pg_id, name, description, ranks FROM process_groups ORDER BY rank, pg_id");
  while (g.step()) {
    GroupRow row;
    row.rank = static_cast<int>(g.column_int64(0));
    row.pg_id = g.column_int64(1);
    row.name = g.column_text(2);
    row.desc = g.column_text(3);
    try {
      row.ranks = nlohmann::json::parse(g.column_text(4)).get<std::vector<int>>();
    } catch (const nlohmann::json::exception&) {
    }
    data.groups.push_back(std::move(row));
  }
}

// A JSON cell of the collectives table; a damaged one reads as an empty array.
nlohmann::json parsed_cell(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::array();
  }
}

// The collectives row `c` stands on (the columns of read_flight_collectives' query).
CollectiveRow collective_of(Statement& c) {
  CollectiveRow row;
  row.rank = static_cast<int>(c.column_int64(0));
  row.pg_id = c.column_int64(1);
  row.record_id = c.column_int64(2);
  row.pg_name = c.column_text(3);
  row.pg_desc = c.column_text(4);
  // Bounded as a dump's numbers are (flight_records.cpp): a damaged cell must not
  // overflow the analysis's arithmetic.
  constexpr int64_t kMax = int64_t{1} << 61;
  const auto seq = [&](int col) {
    const int64_t v = c.column_optional(col);
    return v < 0 ? int64_t{-1} : std::min(v, kMax);
  };
  row.collective_seq = seq(5);
  row.p2p_seq = seq(6);
  row.op = c.column_text(7);
  row.profiling_name = c.column_text(8);
  if (row.is_p2p()) parse_p2p_ends(row);  // the two ends are in the name
  try {
    // The JSON cells through the dump parser, which checks every number.
    const nlohmann::json cells = {{"input_sizes", parsed_cell(c.column_text(9))},
                                  {"output_sizes", parsed_cell(c.column_text(10))},
                                  {"input_dtypes", parsed_cell(c.column_text(11))},
                                  {"output_dtypes", parsed_cell(c.column_text(12))},
                                  {"frames", parsed_cell(c.column_text(20))}};
    CollectiveRow p = collective_from_entry(cells, row.rank);
    row.input_sizes = std::move(p.input_sizes);
    row.output_sizes = std::move(p.output_sizes);
    row.input_dtypes = std::move(p.input_dtypes);
    row.output_dtypes = std::move(p.output_dtypes);
    row.frames = std::move(p.frames);
  } catch (const std::exception&) {
    // a damaged cell: the record still counts, without its sizes
  }
  row.state = c.column_text(13);
  row.t_created_ns = std::clamp<int64_t>(c.column_optional(14), 0, kMax);
  row.t_started_ns = std::clamp<int64_t>(c.column_optional(15), 0, kMax);
  row.t_completed_ns = std::clamp<int64_t>(c.column_optional(16), 0, kMax);
  row.timeout_ms = std::clamp<int64_t>(c.column_int64(17), 0, 1'000'000'000);
  row.phase = c.column_text(18);
  row.iteration = c.column_optional(19);
  row.source = c.column_text(21);
  return row;
}

void read_flight_collectives(SqliteDb& db, FlightData& data) {
  Statement c = db.prepare(
      "SELECT rank, pg_id, record_id, pg_name, pg_desc, collective_seq, p2p_seq, op, profiling_name, input_sizes, "
      "output_sizes, input_dtypes, output_dtypes, state, t_created_ns, t_started_ns, t_completed_ns, timeout_ms, "
      "phase, iteration, frames, source FROM collectives ORDER BY rank, pg_id, record_id");
  while (c.step()) {
    CollectiveRow row = collective_of(c);
    data.by_rank[row.rank].push_back(std::move(row));
  }
}

// The dumps merged into the file, by time.
void read_flight_dumps(SqliteDb& db, FlightData& data) {
  Statement d = db.prepare(
      "SELECT rank, t_ns, reason, trigger, file, stall_ns, stall_end_ns, source FROM flight_dumps ORDER BY t_ns");
  const auto bounded = [&](int col) { return std::clamp<int64_t>(d.column_optional(col), 0, int64_t{1} << 61); };
  while (d.step())
    data.dumps.push_back({static_cast<int>(d.column_int64(0)), bounded(1), d.column_text(2), d.column_text(3),
                          d.column_text(4), bounded(5), bounded(6), d.column_text(7)});
}

}  // namespace

FlightData RunStoreReader::flight() {
  FlightData data;
  const RunRow r = run();
  data.world_size = r.world_size;
  std::map<int, int64_t> offsets;
  for (const RankRow& rank : ranks())
    offsets[rank.rank] = rank.clock_offset_ns;
  if (r.schema >= 6) {
    read_flight_groups(db_, data);
    read_flight_collectives(db_, data);
    read_flight_dumps(db_, data);
  }
  // Dumps not merged yet (flight_recorder.h): written when the collector was gone.
  for (const std::string& file : flight_dumps_beside(db_.path())) {
    try {
      const FlightDump dump = read_flight_dump(file);
      const bool merged = std::any_of(data.dumps.begin(), data.dumps.end(),
                                      [&](const FlightDumpRow& d) { return d.file == file && d.rank == dump.rank; });
      if (!merged) data.add(dump, offsets.count(dump.rank) ? offsets[dump.rank] : 0);
    } catch (const RunStoreError&) {
      // a dump cut short by the process's death: the records streamed before it stand
    }
  }
  data.world_size = std::max(data.world_size, r.world_size);
  data.sort();
  return data;
}

std::optional<RunStoreReader::StoredSpan> RunStoreReader::span_by_id(int64_t span_id) {
  if (schema_version(db_) < 8) return std::nullopt;
  Statement s = db_.prepare(
      "SELECT first_id, rank, thread, count, data FROM span_packs WHERE first_id <= ? ORDER BY first_id DESC LIMIT 1");
  s.bind(1, span_id);
  if (!s.step() || span_id >= s.column_int64(0) + s.column_int64(3)) return std::nullopt;
  std::vector<PackedSpan> spans;
  const auto [data, size] = s.column_blob(4);
  decode_pack(data, size, spans);
  const auto index = static_cast<size_t>(span_id - s.column_int64(0));
  if (index >= spans.size()) return std::nullopt;
  return StoredSpan{static_cast<int>(s.column_int64(1)), static_cast<int>(s.column_int64(2)), spans[index]};
}

std::string RunStoreReader::span_args(int64_t span_id) {
  if (schema_version(db_) < 10) return {};
  Statement s =
      db_.prepare("SELECT first_id, count, data FROM span_args WHERE first_id <= ? ORDER BY first_id DESC LIMIT 1");
  s.bind(1, span_id);
  if (!s.step() || span_id >= s.column_int64(0) + s.column_int64(1)) return {};
  const auto [data, size] = s.column_blob(2);
  return args_in_pack(data, size, static_cast<size_t>(span_id - s.column_int64(0)));
}

void RunStoreReader::save_copy(const std::string& dest) {
  try {
    Statement s = db_.prepare("VACUUM INTO ?");
    s.bind(1, dest);
    s.step();
  } catch (const std::exception& e) {
    throw RunStoreError(detail::concat("cannot save a copy of '", db_.path(), "' as '", dest, "': ", e.what()),
                        __FILE__, __LINE__);
  }
}

std::vector<RankRow> RunStoreReader::ranks() {
  Statement s =
      db_.prepare(std::string("SELECT rank, host, pid, device, clock_offset_ns, clock_rtt_ns, events_received, "
                              "events_dropped, batches_received, ") +
                  (schema_version(db_) >= 11 ? "local_rank, node, " : "NULL, NULL, ") +
                  (schema_version(db_) >= 14 ? "end_state" : "NULL") + " FROM ranks ORDER BY rank");
  std::vector<RankRow> out;
  while (s.step()) {
    RankRow r;
    r.rank = static_cast<int>(s.column_int64(0));
    r.host = s.column_text(1);
    r.pid = s.column_int64(2);
    r.device = s.column_text(3);
    r.clock_offset_ns = s.column_int64(4);
    r.clock_rtt_ns = s.column_optional(5);
    r.events_received = s.column_int64(6);
    r.events_dropped = s.column_int64(7);
    r.batches_received = s.column_int64(8);
    r.local_rank = static_cast<int>(s.column_optional(9));
    r.node = static_cast<int>(s.column_optional(10));
    r.end_state = s.column_text(11);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ThreadRow> RunStoreReader::threads() {
  Statement s = db_.prepare("SELECT rank, thread, tid, name FROM threads ORDER BY rank, thread");
  std::vector<ThreadRow> out;
  while (s.step()) {
    out.push_back({static_cast<int>(s.column_int64(0)), static_cast<int>(s.column_int64(1)), s.column_int64(2),
                   s.column_text(3)});
  }
  return out;
}

namespace {

uint64_t kind_mask(const std::vector<Kind>& kinds) {
  uint64_t mask = 0;
  for (Kind k : kinds)
    mask |= uint64_t{1} << (static_cast<int>(k) & 63);
  return mask;
}

// A mask as an SQL integer literal. Written as unsigned, a mask with bit 63 set reads as
// a real beyond int64, and `kinds & mask` then passed every pack (the structure of a
// 100M-span run decoded all of its detail too).
std::string sql_mask(uint64_t mask) { return std::to_string(static_cast<int64_t>(mask)); }

// The fields a SpanRow and a CompactSpan both take from a packed span.
template <typename Row>
void take_fields(Row& r, const PackedSpan& p) {
  r.kind = static_cast<Kind>(p.kind);
  r.t_begin_ns = p.t_begin_ns;
  r.t_end_ns = p.t_end_ns;
  r.iteration = p.iteration;
  r.bucket = p.bucket;
  r.param = p.param;
  r.bytes = p.bytes;
  r.seq = p.seq;
  r.msg_id = p.msg_id;
  r.ended_by_error = (p.flags & kEndedByError) != 0;
}

// A pack's spans appended to `out`, its damage reported as the file's.
void decode_stored_pack(const Statement& s, int column, int64_t first_id, const std::string& path,
                        std::vector<PackedSpan>& out) {
  const auto [data, size] = s.column_blob(column);
  try {
    decode_pack(data, size, out);
  } catch (const Error& e) {
    throw RunStoreError(detail::concat("run file '", path, "' is damaged: the pack of spans from ", first_id,
                                       " cannot be read (", e.what(), ")"),
                        __FILE__, __LINE__);
  }
  for (const PackedSpan& p : out) {
    if (p.kind < 0 || p.kind >= kNumKinds) {
      throw RunStoreError(detail::concat("run file '", path, "' is damaged: the pack of spans from ", first_id,
                                         " holds span kind ", p.kind, ", which no ddpscope writes"),
                          __FILE__, __LINE__);
    }
  }
}

}  // namespace

// Every span of the packs `q` selects that matches it, in file order, with its id.
void RunStoreReader::walk_packs(const SpanQuery& q,
                                const std::function<void(int64_t, int32_t, int32_t, const PackedSpan&)>& fn) {
  // Packs by rank, time and kinds through their index; then the spans in them.
  std::string sql = "SELECT rank, thread, first_id, data FROM span_packs WHERE t_min <= ?1 AND t_max >= ?2";
  if (q.rank >= 0) sql += " AND rank = ?3";
  const uint64_t mask = kind_mask(q.kinds);
  if (mask) sql += " AND (kinds & " + sql_mask(mask) + ") != 0";
  Statement s = db_.prepare(sql);
  s.bind(1, q.t_end_ns).bind(2, q.t_begin_ns);
  if (q.rank >= 0) s.bind(3, int64_t{q.rank});
  std::vector<PackedSpan> pack;
  while (s.step()) {
    pack.clear();
    const int64_t first_id = s.column_int64(2);
    decode_stored_pack(s, 3, first_id, db_.path(), pack);
    const auto rank = static_cast<int32_t>(s.column_int64(0)), thread = static_cast<int32_t>(s.column_int64(1));
    for (size_t i = 0; i < pack.size(); ++i) {
      const PackedSpan& p = pack[i];
      if (p.t_begin_ns > q.t_end_ns || p.t_end_ns < q.t_begin_ns) continue;
      if (mask && !((mask >> p.kind) & 1)) continue;
      if (q.iteration >= 0 && p.iteration != q.iteration) continue;
      fn(first_id + static_cast<int64_t>(i), rank, thread, p);
    }
  }
}

std::vector<RunStoreReader::Site> RunStoreReader::sites() {
  std::vector<Site> sites;
  Statement n = db_.prepare("SELECT name_id, name, file, line FROM names");
  while (n.step()) {
    const int64_t id = n.column_int64(0);
    if (id < 0 || id > (int64_t{1} << 24)) continue;  // damaged: its spans get no name
    if (static_cast<size_t>(id) >= sites.size()) sites.resize(static_cast<size_t>(id) + 1);
    sites[static_cast<size_t>(id)] = {n.column_text(1), n.column_text(2), n.column_int64(3)};
  }
  return sites;
}

namespace {

SpanRow row_of(int32_t rank, int32_t thread, const PackedSpan& p, const std::vector<RunStoreReader::Site>& sites) {
  SpanRow r;
  r.rank = rank;
  r.thread = thread;
  take_fields(r, p);
  if (p.name_id >= 0 && static_cast<size_t>(p.name_id) < sites.size()) {
    const RunStoreReader::Site& site = sites[static_cast<size_t>(p.name_id)];
    r.name = site.name;
    r.file = site.file;
    r.line = site.line;
  }
  r.peer = p.peer;
  r.ctx_id = p.ctx_id;
  return r;
}

}  // namespace

std::vector<SpanRow> RunStoreReader::spans(const SpanQuery& q) {
  if (!packed_) return row_spans(q);
  struct Hit {
    int64_t id;
    int32_t rank, thread;
    PackedSpan span;
  };
  std::vector<Hit> hits;
  walk_packs(q, [&](int64_t id, int32_t rank, int32_t thread, const PackedSpan& p) {
    hits.push_back({id, rank, thread, p});
  });
  const auto by_time = [](const Hit& a, const Hit& b) {
    return a.span.t_begin_ns != b.span.t_begin_ns ? a.span.t_begin_ns < b.span.t_begin_ns : a.id < b.id;
  };
  if (q.limit > 0 && static_cast<size_t>(q.limit) < hits.size()) {
    std::partial_sort(hits.begin(), hits.begin() + q.limit, hits.end(), by_time);
    hits.resize(static_cast<size_t>(q.limit));
  } else {
    std::sort(hits.begin(), hits.end(), by_time);
  }
  const std::vector<Site> names = sites();
  // Each row copies its name: one long name shared by many spans (4.5 MB by 400 marks
  // made 1.9 GB) is refused before it is copied, for what the rows would hold.
  int64_t name_bytes = 0;
  for (const Hit& h : hits)
    if (h.span.name_id >= 0 && static_cast<size_t>(h.span.name_id) < names.size())
      name_bytes += static_cast<int64_t>(names[static_cast<size_t>(h.span.name_id)].name.size() +
                                         names[static_cast<size_t>(h.span.name_id)].file.size());
  if (name_bytes > kMaxRowNameBytes)
    throw RunStoreError(detail::concat("run file '", db_.path(), "': the ", hits.size(), " spans read carry ",
                                       name_bytes >> 20, " MiB of names, more than ", kMaxRowNameBytes >> 20,
                                       " MiB (long names repeated span after span): it is damaged, or was made "
                                       "to exhaust memory"),
                        __FILE__, __LINE__);
  std::vector<SpanRow> out;
  out.reserve(hits.size());
  for (const Hit& h : hits)
    out.push_back(row_of(h.rank, h.thread, h.span, names));
  return out;
}

void RunStoreReader::each_span_row(const SpanQuery& q, const std::function<void(const SpanRow&)>& fn) {
  if (!packed_) {
    for (const SpanRow& r : row_spans(q))
      fn(r);
    return;
  }
  const std::vector<Site> names = sites();
  walk_packs(q,
             [&](int64_t, int32_t rank, int32_t thread, const PackedSpan& p) { fn(row_of(rank, thread, p, names)); });
}

std::vector<SpanRow> RunStoreReader::row_spans(const SpanQuery& q) {
  // Blocks first (the small indexed table of schema 7 and older), then the rowid ranges
  // of spans they name; CROSS JOIN keeps SQLite to that order.
  std::string sql =
      "SELECT s.rank, s.thread, s.kind, n.name, s.t_begin_ns, s.t_end_ns, s.iteration, s.bucket, "
      "s.param, s.bytes, s.peer, s.seq, s.ctx_id, s.msg_id, n.file, n.line FROM span_blocks b "
      "CROSS JOIN spans s "
      "ON s.rowid BETWEEN b.first_rowid AND b.last_rowid CROSS JOIN names n ON n.name_id = "
      "s.name_id WHERE b.t_min <= ?1 AND b.t_max >= ?2 AND s.t_begin_ns <= ?1 AND s.t_end_ns >= ?2";
  if (q.rank >= 0) sql += " AND b.rank = ?3";
  if (q.iteration >= 0) sql += " AND s.iteration = ?4";
  if (!q.kinds.empty()) {
    sql += " AND s.kind IN (";
    for (size_t i = 0; i < q.kinds.size(); ++i) {
      if (i) sql += ",";
      sql += std::to_string(static_cast<int>(q.kinds[i]));
    }
    sql += ") AND (b.kinds & " + std::to_string(kind_mask(q.kinds)) + ") != 0";
  }
  sql += " ORDER BY s.t_begin_ns";
  if (q.limit > 0) sql += " LIMIT " + std::to_string(q.limit);
  Statement s = db_.prepare(sql);
  s.bind(1, q.t_end_ns).bind(2, q.t_begin_ns);
  if (q.rank >= 0) s.bind(3, int64_t{q.rank});
  if (q.iteration >= 0) s.bind(4, q.iteration);
  std::vector<SpanRow> out;
  while (s.step()) {
    SpanRow r;
    r.rank = static_cast<int>(s.column_int64(0));
    r.thread = static_cast<int>(s.column_int64(1));
    r.kind = static_cast<Kind>(s.column_int64(2));
    r.name = s.column_text(3);
    r.t_begin_ns = s.column_int64(4);
    r.t_end_ns = s.column_int64(5);
    r.iteration = s.column_optional(6);
    r.bucket = s.column_optional(7);
    r.param = s.column_optional(8);
    r.bytes = s.column_optional(9);
    r.peer = s.column_optional(10);
    r.seq = s.column_optional(11);
    r.ctx_id = s.column_optional(12);
    r.msg_id = s.column_optional(13);
    r.file = s.column_text(14);
    r.line = s.column_int64(15);
    out.push_back(std::move(r));
  }
  return out;
}

SpanScan RunStoreReader::scan_spans(const std::vector<Kind>& kinds, int rank, int64_t after_rowid, TimeWindow window) {
  SpanScan scan;
  scan.packed_ = packed_;
  scan.kinds_ = kind_mask(kinds);
  scan.after_ = after_rowid;
  scan.window_ = window;
  scan.path_ = db_.path();
  if (packed_) {
    // A pack holds at most kMaxPackSpans spans: those after `after_rowid` are in packs
    // that start within that many ids before it, or later (a range of the primary key).
    // With a rank, its packs through the (rank, t_min) index: "?1 < 0 OR rank = ?1" would
    // read every pack's row for each rank (1,024 ranks' hang analysis: 3.4 s).
    std::string sql =
        "SELECT first_id, rank, thread, data FROM span_packs WHERE first_id > ?2 - ?3 AND first_id + count - 1 > ?2";
    if (rank >= 0) sql += " AND rank = ?1";
    if (scan.kinds_) sql += " AND (kinds & " + sql_mask(scan.kinds_) + ") != 0";
    if (!window.everything()) sql += " AND t_max >= ?4 AND t_min <= ?5";
    sql += " ORDER BY first_id";
    scan.rows_ = db_.prepare(sql);
    scan.rows_.bind(1, int64_t{rank}).bind(2, after_rowid).bind(3, static_cast<int64_t>(kMaxPackSpans));
    if (!window.everything()) scan.rows_.bind(4, window.begin_ns).bind(5, window.end_ns);
    return scan;
  }
  std::string sql =
      "SELECT rank, thread, kind, name_id, t_begin_ns, t_end_ns, iteration, bucket, param, bytes, "
      "seq, rowid, msg_id FROM spans WHERE rowid > ?2 AND (?1 < 0 OR rank = ?1) AND t_end_ns >= ?3 AND "
      "t_begin_ns <= ?4";
  if (!kinds.empty()) {
    sql += " AND kind IN (";
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (i) sql += ',';
      sql += std::to_string(static_cast<int>(kinds[i]));
    }
    sql += ")";
  }
  scan.rows_ = db_.prepare(sql);
  scan.rows_.bind(1, int64_t{rank}).bind(2, after_rowid).bind(3, window.begin_ns).bind(4, window.end_ns);
  return scan;
}

std::vector<PackExtent> RunStoreReader::pack_extents() {
  std::vector<PackExtent> out;
  if (!packed_) return out;
  Statement s = db_.prepare("SELECT t_min, t_max, count, (kinds & " + sql_mask(kDetailKindMask) +
                            ") != 0 FROM span_packs ORDER BY first_id");
  while (s.step())
    out.push_back({s.column_int64(0), s.column_int64(1), s.column_int64(2), s.column_int64(3) != 0});
  return out;
}

bool SpanScan::next(CompactSpan& c) {
  if (!packed_) {
    if (!rows_.step()) return false;
    c.rowid = rows_.column_int64(11);
    c.rank = static_cast<int32_t>(rows_.column_int64(0));
    c.thread = static_cast<int32_t>(rows_.column_int64(1));
    c.kind = static_cast<Kind>(rows_.column_int64(2));
    c.name_id = static_cast<int32_t>(rows_.column_int64(3));
    c.t_begin_ns = rows_.column_int64(4);
    c.t_end_ns = rows_.column_int64(5);
    c.iteration = rows_.column_optional(6);
    c.bucket = rows_.column_optional(7);
    c.param = rows_.column_optional(8);
    c.bytes = rows_.column_optional(9);
    c.seq = rows_.column_optional(10);
    c.msg_id = rows_.column_optional(12);
    c.ended_by_error = false;  // older files did not say
    return true;
  }
  while (true) {
    while (at_ < pack_.size()) {
      const PackedSpan& p = pack_[at_];
      const int64_t id = first_id_ + static_cast<int64_t>(at_);
      ++at_;
      if (id <= after_ || (kinds_ && !((kinds_ >> p.kind) & 1))) continue;
      c.rowid = id;
      c.rank = rank_;
      c.thread = thread_;
      c.name_id = p.name_id;
      take_fields(c, p);
      if (c.t_end_ns < window_.begin_ns || c.t_begin_ns > window_.end_ns) continue;
      return true;
    }
    if (!rows_.step()) return false;
    first_id_ = rows_.column_int64(0);
    rank_ = static_cast<int32_t>(rows_.column_int64(1));
    thread_ = static_cast<int32_t>(rows_.column_int64(2));
    pack_.clear();
    at_ = 0;
    decode_stored_pack(rows_, 3, first_id_, path_, pack_);
    ++packs_read_;
  }
}

std::vector<std::string> RunStoreReader::names() {
  // The writer numbers names densely from 1 (INTEGER PRIMARY KEY), so an id beyond the
  // row count comes from a damaged file; trusting it would allocate without bound
  // (found by fuzz_run_file: an id of 2^33 asked for 156 GB).
  const int64_t rows = db_.query_int64("SELECT count(*) FROM names");
  Statement s = db_.prepare("SELECT name_id, name FROM names ORDER BY name_id");
  std::vector<std::string> out;
  while (s.step()) {
    const int64_t id = s.column_int64(0);
    if (id < 0 || id > rows) {
      throw RunStoreError(detail::concat("run file '", db_.path(), "' is damaged: name id ", id,
                                         " is out of range (the file has ", rows, " names)"),
                          __FILE__, __LINE__);
    }
    if (static_cast<size_t>(id) >= out.size()) out.resize(static_cast<size_t>(id) + 1);
    out[static_cast<size_t>(id)] = s.column_text(1);
  }
  return out;
}

std::string RunStoreReader::name(int64_t name_id) {
  Statement s = db_.prepare("SELECT name FROM names WHERE name_id = ?");
  s.bind(1, name_id);
  return s.step() ? s.column_text(0) : std::string();
}

int64_t RunStoreReader::span_count() {
  // Spans are only ever appended, numbered from 1: the last one's id is the count.
  if (!packed_) return db_.query_int64("SELECT coalesce(max(rowid), 0) FROM spans");
  return db_.query_int64(
      "SELECT coalesce((SELECT first_id + count - 1 FROM span_packs ORDER BY first_id DESC LIMIT 1), 0)");
}

std::pair<int64_t, int64_t> RunStoreReader::time_range() {
  Statement s = db_.prepare(packed_ ? "SELECT min(t_min), max(t_max) FROM span_packs"
                                    : "SELECT min(t_min), max(t_max) FROM span_blocks");
  if (!s.step() || s.column_optional(0) == -1) return {0, 0};
  return {s.column_int64(0), s.column_int64(1)};
}

std::vector<BucketRow> RunStoreReader::buckets(int rank, int generation) {
  Statement s = db_.prepare(
      "SELECT rank, generation, bucket, bytes, params FROM buckets WHERE rank = ?1 AND (?2 < 0 OR "
      "generation = ?2) ORDER BY generation, bucket");
  s.bind(1, int64_t{rank}).bind(2, int64_t{generation});
  std::vector<BucketRow> out;
  while (s.step()) {
    BucketRow r;
    r.rank = static_cast<int>(s.column_int64(0));
    r.generation = static_cast<int>(s.column_int64(1));
    r.bucket = static_cast<int>(s.column_int64(2));
    r.bytes = s.column_int64(3);
    try {
      r.params = nlohmann::json::parse(s.column_text(4)).get<std::vector<int64_t>>();
    } catch (const nlohmann::json::exception&) {
      throw RunStoreError(
          detail::concat("run file '", db_.path(), "': bucket ", r.bucket, " has a malformed parameter list"), __FILE__,
          __LINE__);
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ParamRow> RunStoreReader::params(int rank, int generation) {
  Statement s = db_.prepare(
      "SELECT rank, generation, param_index, name, shape, numel, dtype, bucket, offset FROM params "
      "WHERE rank = ?1 AND (?2 < 0 OR generation = ?2) ORDER BY generation, param_index");
  s.bind(1, int64_t{rank}).bind(2, int64_t{generation});
  std::vector<ParamRow> out;
  while (s.step()) {
    ParamRow r;
    r.rank = static_cast<int>(s.column_int64(0));
    r.generation = static_cast<int>(s.column_int64(1));
    r.index = static_cast<int>(s.column_int64(2));
    r.name = s.column_text(3);
    r.shape = s.column_text(4);
    r.numel = s.column_int64(5);
    r.dtype = s.column_text(6);
    r.bucket = s.column_optional(7);
    r.offset = s.column_int64(8);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ShardRow> RunStoreReader::zero_shards(int rank) {
  std::vector<ShardRow> out;
  if (schema_version(db_) < 7) return out;
  Statement s = db_.prepare("SELECT param, name, numel, owner FROM zero_shards WHERE rank = ? ORDER BY param");
  s.bind(1, int64_t{rank});
  while (s.step()) {
    ShardRow r;
    r.rank = rank;
    r.param = static_cast<int>(s.column_int64(0));
    r.name = s.column_text(1);
    r.numel = s.column_int64(2);
    r.owner = static_cast<int>(s.column_int64(3));
    out.push_back(std::move(r));
  }
  return out;
}

GraphRows RunStoreReader::graph(int rank, int64_t ctx_id, int64_t iteration) {
  GraphRows g;
  g.rank = rank;
  g.ctx_id = ctx_id;
  Statement first =
      db_.prepare("SELECT min(iteration) FROM graph_nodes WHERE rank = ? AND ctx_id = ? AND iteration >= ?");
  first.bind(1, int64_t{rank}).bind(2, ctx_id).bind(3, iteration);
  if (!first.step() || first.column_optional(0) < 0) return g;
  g.iteration = first.column_int64(0);
  Statement n = db_.prepare(
      "SELECT node_id, op, kind, deps, sequence_nr, msg_id, peer FROM graph_nodes WHERE rank = ? AND "
      "ctx_id = ? AND iteration = ? ORDER BY node_id");
  n.bind(1, int64_t{rank}).bind(2, ctx_id).bind(3, g.iteration);
  while (n.step()) {
    g.nodes.push_back({n.column_int64(0), n.column_text(1), n.column_text(2), n.column_int64(3), n.column_int64(4),
                       n.column_optional(5), static_cast<int>(n.column_optional(6))});
  }
  Statement e =
      db_.prepare("SELECT src, dst, input_nr FROM graph_edges WHERE rank = ? AND ctx_id = ? AND iteration = ?");
  e.bind(1, int64_t{rank}).bind(2, ctx_id).bind(3, g.iteration);
  while (e.step())
    g.edges.push_back({e.column_int64(0), e.column_int64(1), e.column_int64(2)});
  return g;
}

std::vector<GraphRows> RunStoreReader::graph_index() {
  Statement s = db_.prepare(
      "SELECT DISTINCT rank, ctx_id, iteration FROM graph_nodes ORDER BY ctx_id < 0, ctx_id, iteration, rank");
  std::vector<GraphRows> out;
  while (s.step()) {
    GraphRows g;
    g.rank = static_cast<int>(s.column_int64(0));
    g.ctx_id = s.column_int64(1);
    g.iteration = s.column_int64(2);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<MetricRow> RunStoreReader::metrics(const std::string& name, int rank) {
  Statement s = db_.prepare(
      "SELECT rank, iteration, name, value FROM metrics WHERE (?1 = '' OR name = ?1) AND (?2 < 0 "
      "OR rank = ?2) ORDER BY name, rank, iteration");
  s.bind(1, name).bind(2, int64_t{rank});
  std::vector<MetricRow> out;
  while (s.step()) {
    // A NaN is stored as text (see RunStoreWriter::store_record).
    const bool text = s.column_is_text(3);
    out.push_back({static_cast<int>(s.column_int64(0)), s.column_optional(1), s.column_text(2),
                   text ? std::numeric_limits<double>::quiet_NaN() : s.column_double(3)});
  }
  return out;
}

std::vector<MessageRow> RunStoreReader::messages(int64_t ctx_id) {
  Statement s = db_.prepare(
      "SELECT ctx_id, msg_id, src_rank, dst_rank, kind, coalesce(name, ''), coalesce(bytes, 0), "
      "t_send_ns, t_recv_ns FROM messages WHERE ?1 = -2 OR coalesce(ctx_id, -1) = ?1 "
      "ORDER BY t_send_ns IS NULL, t_send_ns, t_recv_ns");
  s.bind(1, ctx_id);
  std::vector<MessageRow> out;
  while (s.step()) {
    out.push_back({s.column_optional(0), s.column_int64(1), static_cast<int>(s.column_int64(2)),
                   static_cast<int>(s.column_int64(3)), s.column_text(4), s.column_text(5), s.column_int64(6),
                   s.column_optional(7), s.column_optional(8)});
  }
  return out;
}

std::string RunStoreReader::integrity_check() {
  Statement s = db_.prepare("PRAGMA integrity_check");
  std::string verdict;
  while (s.step())
    verdict += (verdict.empty() ? "" : "; ") + s.column_text(0);
  return verdict;
}

}  // namespace ddpscope::probes
