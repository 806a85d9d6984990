#include "run_store_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>

#include "ddpscope/log.h"

#include "json_number.h"
#include "args_pack.h"
#include "run_store_schema.h"

namespace ddpscope::probes {

std::string iso_time_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32], zone[48];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  // The offset as +HH:MM (ISO 8601 extended, which Qt parses; %z gives +HHMM).
  const long offset_min = tm.tm_gmtoff / 60;
  std::snprintf(zone, sizeof(zone), "%c%02ld:%02ld", offset_min < 0 ? '-' : '+', std::labs(offset_min) / 60,
                std::labs(offset_min) % 60);
  return std::string(stamp) + zone;
}

RunStoreWriter::RunStoreWriter(const std::string& path)
    : db_(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX) {
  // Larger pages: fewer page writes per row (ingest 1.08M -> 1.41M rows/s in a test
  // program). Only possible before the first table and before WAL mode.
  if (is_empty_database(db_)) db_.exec("PRAGMA page_size=16384");
  db_.exec("PRAGMA journal_mode=WAL");
  db_.exec("PRAGMA synchronous=NORMAL");
  db_.exec("PRAGMA cache_size=-65536");  // 64 MiB
  create_or_migrate(db_);
  insert_pack_ = db_.prepare(
      "INSERT INTO span_packs(first_id, rank, thread, count, t_min, t_max, kinds, data) VALUES(?,?,?,?,?,?,?,?)");
  next_span_id_ = db_.query_int64(
      "SELECT coalesce((SELECT first_id + count FROM span_packs ORDER BY first_id DESC "
      "LIMIT 1), 1)");
  insert_name_ = db_.prepare("INSERT INTO names(name, file, line) VALUES(?, ?, ?)");
  insert_args_ = db_.prepare("INSERT OR REPLACE INTO span_args(first_id, count, data) VALUES(?, ?, ?)");
  upsert_thread_ = db_.prepare("INSERT OR REPLACE INTO threads(rank, thread, tid, name) VALUES(?,?,?,?)");
  update_rank_counts_ = db_.prepare(
      "UPDATE ranks SET events_received = events_received + ?, batches_received = "
      "batches_received + 1, events_dropped = max(events_dropped, ?) WHERE rank = ?");
  ensure_rank_ = db_.prepare("INSERT OR IGNORE INTO ranks(rank) VALUES(?)");
  insert_metric_ = db_.prepare("INSERT INTO metrics(rank, iteration, name, value) VALUES(?,?,?,?)");
  // The send and the receive of one RPC message arrive from different ranks in either
  // order: whichever comes second completes the row the first made.
  upsert_message_ = db_.prepare(
      "INSERT INTO messages(ctx_id, msg_id, src_rank, dst_rank, kind, bytes, t_send_ns, t_recv_ns, "
      "name) VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(msg_id, kind) DO UPDATE SET "
      "t_send_ns = coalesce(excluded.t_send_ns, t_send_ns), "
      "t_recv_ns = coalesce(excluded.t_recv_ns, t_recv_ns), "
      "bytes = max(coalesce(bytes, 0), coalesce(excluded.bytes, 0)), name = coalesce(name, excluded.name)");
  Statement names = db_.prepare("SELECT name_id, name, file, line FROM names");
  while (names.step()) {
    name_ids_[name_key({names.column_text(1), names.column_text(2), static_cast<uint32_t>(names.column_int64(3))})] =
        names.column_int64(0);
  }
}

RunStoreWriter::~RunStoreWriter() {
  try {
    // Fold the WAL back in and leave WAL mode: the finished run is one self-contained
    // file, which readers open without writing anything beside it (a WAL-mode file in
    // a read-only folder cannot even be read). A reader that still has it open keeps
    // it in WAL mode (the switch needs the file alone), which readers also handle.
    db_.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db_.exec("PRAGMA journal_mode=DELETE");
  } catch (...) {
  }
}

bool RunStoreWriter::fold_wal() {
  try {
    Statement s = db_.prepare("PRAGMA wal_checkpoint(TRUNCATE)");
    // One row: (busy, pages in the WAL, pages copied); busy 1 when a reader held it back.
    return s.step() && s.column_int64(0) == 0;
  } catch (const RunStoreError&) {
    return false;
  }
}

void RunStoreWriter::begin_run(const RunDescription& run) {
  Statement s = db_.prepare(
      "INSERT OR REPLACE INTO runs(run_id, created_at, config_json, world_size, backend, model, "
      "status) VALUES(1, ?, ?, ?, ?, ?, 'running')");
  s.bind(1, iso_time_now())
      .bind(2, run.config_json)
      .bind(3, int64_t{run.world_size})
      .bind(4, run.backend)
      .bind(5, run.model);
  s.step();
}

void RunStoreWriter::end_run(const RunEnd& end) {
  Statement s = db_.prepare(
      "UPDATE runs SET status = ?, message = ?, failed_rank = ?, ended_at = ?, dead_rank = ?, dead_signal = ?, "
      "failed_op = ?, failed_seq = ?, failed_timed_out = ? WHERE run_id = 1");
  s.bind(1, end.status).bind(2, end.message).bind_optional(3, end.failed_rank).bind(4, iso_time_now());
  s.bind_optional(5, end.dead_rank);
  if (end.dead_rank >= 0)
    s.bind(6, end.dead_signal);
  else
    s.bind_null(6);
  if (end.failed.known()) {
    s.bind(7, end.failed.op).bind(8, end.failed.seq).bind(9, int64_t{end.failed.timed_out});
  } else {
    s.bind_null(7).bind_null(8).bind_null(9);
  }
  s.step();
}

void RunStoreWriter::end_run(const std::string& status, const std::string& message, int failed_rank, int dead_rank,
                             const std::string& dead_signal) {
  end_run(RunEnd{status, message, failed_rank, dead_rank, dead_signal, {}});
}

void RunStoreWriter::set_ended_ns(int64_t ended_ns) {
  Statement s = db_.prepare("UPDATE runs SET ended_ns = ? WHERE run_id = 1");
  s.bind(1, ended_ns);
  s.step();
}

void RunStoreWriter::set_rank_end_states(const std::map<int, std::string>& states) {
  for (const auto& [rank, state] : states) {
    ensure_rank(rank);
    Statement s = db_.prepare("UPDATE ranks SET end_state = ? WHERE rank = ?");
    s.bind(1, state).bind(2, int64_t{rank});
    s.step();
  }
}

void RunStoreWriter::ensure_rank(int rank) {
  if (known_ranks_.count(rank)) return;
  ensure_rank_.bind(1, int64_t{rank});
  ensure_rank_.step();
  ensure_rank_.reset();
  known_ranks_[rank] = true;
}

void RunStoreWriter::add_dropped(int rank, uint64_t count) {
  ensure_rank(rank);
  Statement s = db_.prepare("UPDATE ranks SET events_dropped = events_dropped + ? WHERE rank = ?");
  s.bind(1, static_cast<int64_t>(count)).bind(2, int64_t{rank});
  s.step();
}

void RunStoreWriter::add_refused_events(int rank, uint64_t count) {
  store_metric(rank, {{"name", "collector.events_refused"}, {"value", count}});
}

void RunStoreWriter::set_rejected(uint64_t batches) {
  Statement s = db_.prepare("UPDATE runs SET rejected_batches = ? WHERE run_id = 1");
  s.bind(1, static_cast<int64_t>(batches));
  s.step();
}

std::string RunStoreWriter::name_key(const NameInfo& n) {
  return n.name + '\0' + n.file + '\0' + std::to_string(n.line);
}

int64_t RunStoreWriter::name_id(const NameInfo& name) {
  std::string key = name_key(name);
  if (auto it = name_ids_.find(key); it != name_ids_.end()) return it->second;
  insert_name_.bind(1, name.name).bind(2, name.file).bind(3, int64_t{name.line});
  insert_name_.step();
  insert_name_.reset();
  const int64_t id = sqlite3_last_insert_rowid(db_.handle());
  name_ids_.emplace(std::move(key), id);
  return id;
}

namespace {

// An iteration number moved by its attempt's shift; negative (none) stays none.
int64_t shifted(int64_t iteration, int64_t shift) { return iteration < 0 ? iteration : iteration + shift; }

PackedSpan packed_span(const BatchEvent& e, const std::vector<int64_t>& name_ids, int64_t offset, int64_t shift) {
  // RPC and distributed-autograd kinds carry (context, message) in id/id2, GPU kinds their
  // correlation id in id2; RRef events (rref, fork); a dependency instant (context,
  // node); an autograd node (node, and its context in a distributed pass); the others a
  // sequence number in id.
  const auto kind = static_cast<Kind>(e.kind);
  const bool rpc = kind == Kind::RpcSend || kind == Kind::RpcRecv || kind == Kind::DistBackward ||
                   kind == Kind::RpcCall || kind == Kind::DistContext || kind == Kind::DistFunction;
  const bool rref = kind == Kind::RRef;
  const bool dependency = kind == Kind::Dependency;
  const bool node = kind == Kind::AutogradNode;
  // Imported GPU work and its launches: the trace's correlation id joins them.
  const bool gpu = kind == Kind::GpuKernel || kind == Kind::GpuComm || kind == Kind::GpuMemcpy ||
                   kind == Kind::GpuMemset || kind == Kind::CudaRuntime;
  auto optional = [](int64_t v) { return v < 0 ? int64_t{-1} : v; };  // every negative: not set
  PackedSpan p;
  p.kind = e.kind;
  p.name_id = static_cast<int32_t>(name_ids[e.name]);
  p.t_begin_ns = e.t_begin_ns + offset;
  p.t_end_ns = e.t_end_ns + offset;
  p.iteration = shifted(optional(e.iteration), shift);
  p.bucket = optional(e.bucket);
  p.param = optional(e.param);
  p.bytes = optional(e.bytes);
  p.peer = optional(e.peer);
  p.seq = optional(rpc || rref ? -1 : dependency ? e.id2 : e.id);
  p.ctx_id = optional(rpc || dependency ? e.id : node ? e.id2 : -1);
  p.msg_id = optional(rpc || gpu || kind == Kind::RingStep ? e.id2 : -1);
  p.rref_id = optional(rref ? e.id : -1);
  p.fork_id = optional(rref ? e.id2 : -1);
  p.flags = e.flags & kEndedByError;  // the only flag kept (the shipper took the ticks one)
  return p;
}

}  // namespace

void RunStoreWriter::write_pack(int64_t rank, const std::vector<const BatchEvent*>& events,
                                const std::vector<int64_t>& ids, int64_t offset) {
  if (events.empty()) return;
  int64_t t_min = std::numeric_limits<int64_t>::max(), t_max = std::numeric_limits<int64_t>::min();
  int64_t kinds = 0;
  pack_.clear();
  const int64_t shift = iteration_shift(static_cast<int>(rank));
  for (const BatchEvent* e : events) {
    pack_.push_back(packed_span(*e, ids, offset, shift));
    max_iteration_ = std::max(max_iteration_, pack_.back().iteration);
    t_min = std::min(t_min, pack_.back().t_begin_ns);
    t_max = std::max(t_max, pack_.back().t_end_ns);
    kinds |= int64_t{1} << (e->kind & 63);
  }
  const std::string blob = encode_pack(pack_);
  insert_pack_.bind(1, next_span_id_)
      .bind(2, rank)
      .bind(3, int64_t{events.front()->thread})
      .bind(4, static_cast<int64_t>(events.size()))
      .bind(5, t_min)
      .bind(6, t_max)
      .bind(7, kinds)
      .bind_blob(8, blob.data(), blob.size());
  insert_pack_.step();
  insert_pack_.rewind();
  if (batch_args_) {  // the pack's spans' arguments, beside it
    std::vector<const std::string*> args(events.size(), nullptr);
    bool any = false;
    for (size_t i = 0; i < events.size(); ++i) {
      const auto found = batch_args_->find(events[i]);
      if (found == batch_args_->end()) continue;
      args[i] = found->second;
      any = true;
    }
    if (any) {
      const std::string packed = encode_args_pack(args);
      insert_args_.bind(1, next_span_id_).bind(2, static_cast<int64_t>(events.size()));
      insert_args_.bind_blob(3, packed.data(), packed.size());
      insert_args_.step();
      insert_args_.reset();
    }
  }
  next_span_id_ += static_cast<int64_t>(events.size());
}

void RunStoreWriter::write(const EventBatch& batch) {
  db_.exec("BEGIN");
  const int64_t first_span_id = next_span_id_;
  try {
    ensure_rank(batch.rank);
    const auto rank = int64_t{batch.rank};
    for (const auto& t : batch.threads) {
      upsert_thread_.bind(1, rank).bind(2, int64_t{t.thread}).bind(3, t.tid).bind(4, t.name);
      upsert_thread_.step();
      upsert_thread_.reset();
    }
    std::vector<int64_t> ids;
    ids.reserve(batch.names.size());
    for (const auto& n : batch.names)
      ids.push_back(name_id(n));
    const int64_t offset = batch.clock_offset_ns;
    // A new attempt's place first: its events' iterations continue the run's count.
    for (const auto& r : batch.records)
      if (r.find("\"placement\"") != std::string::npos) write_record(batch.rank, r, offset);
    const auto& events = batch.events;
    std::unordered_map<const BatchEvent*, const std::string*> args;
    for (const auto& [index, json] : batch.args)
      if (index < events.size()) args.emplace(&events[index], &json);
    batch_args_ = args.empty() ? nullptr : &args;
    // Packs: one thread's events (the shipper sends them thread by thread, but a batch
    // written otherwise must not cut a pack at each change of thread: a synthetic run
    // that interleaved two threads made packs of 4 and 16 spans, and reading the
    // structure of 100M spans took 1.15M packs), the detail kinds apart from the
    // structure (event.h), each at most kPackSpans.
    std::vector<const BatchEvent*> order;
    order.reserve(events.size());
    for (const auto& e : events)
      order.push_back(&e);
    std::stable_sort(order.begin(), order.end(),
                     [](const BatchEvent* a, const BatchEvent* b) { return a->thread < b->thread; });
    for (size_t begin = 0; begin < order.size();) {
      size_t end = begin + 1;
      while (end < order.size() && order[end]->thread == order[begin]->thread)
        ++end;
      structure_.clear();
      detail_.clear();
      for (size_t i = begin; i < end; ++i) {
        auto& tier = is_detail_kind(order[i]->kind) ? detail_ : structure_;
        tier.push_back(order[i]);
        if (tier.size() == kPackSpans) {
          write_pack(rank, tier, ids, offset);
          tier.clear();
        }
      }
      write_pack(rank, structure_, ids, offset);
      write_pack(rank, detail_, ids, offset);
      begin = end;
    }
    for (const auto& e : events) {
      const auto kind = static_cast<Kind>(e.kind);
      if (kind == Kind::RpcSend || kind == Kind::RpcRecv) write_message(rank, e, batch.names[e.name].name, offset);
    }
    for (const auto& r : batch.records)
      if (r.find("\"placement\"") == std::string::npos) write_record(batch.rank, r, offset);
    update_rank_counts_.bind(1, static_cast<int64_t>(batch.events.size()))
        .bind(2, static_cast<int64_t>(batch.dropped_total))
        .bind(3, rank);
    update_rank_counts_.step();
    update_rank_counts_.reset();
    batch_args_ = nullptr;
    db_.exec("COMMIT");
    events_written_ += static_cast<int64_t>(batch.events.size());
  } catch (...) {
    batch_args_ = nullptr;
    next_span_id_ = first_span_id;  // the packs were rolled back with the rest
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
}

void RunStoreWriter::write_message(int64_t rank, const BatchEvent& e, const std::string& name, int64_t offset) {
  const bool send = static_cast<Kind>(e.kind) == Kind::RpcSend;
  const int64_t t = e.t_begin_ns + offset;
  upsert_message_.bind_optional(1, e.id)
      .bind(2, e.id2)
      .bind(3, send ? rank : int64_t{e.peer})
      .bind(4, send ? int64_t{e.peer} : rank)
      .bind(5, std::string(rpc_message_kind_name(e.param)))
      .bind_optional(6, e.bytes)
      .bind_optional(7, send ? t : -1)
      .bind_optional(8, send ? -1 : t)
      .bind(9, name);
  upsert_message_.step();
  upsert_message_.reset();
}

void RunStoreWriter::write_record(int rank, const std::string& text, int64_t offset) {
  nlohmann::json r;
  try {
    r = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    log::warn("run store: rank {} sent a malformed record ({}); skipped", rank, e.what());
    return;
  }
  try {
    store_record(rank, r, offset);
  } catch (const std::exception& e) {
    log::warn("run store: rank {} sent a record with bad fields ({}); skipped", rank, e.what());
  }
}

void RunStoreWriter::store_record(int rank, const nlohmann::json& r, int64_t offset) {
  const std::string type = r.value("type", "");
  const auto rk = int64_t{rank};
  if (type == "metric")
    store_metric(rk, r);
  else if (type == "rank")
    store_rank(rk, r);
  else if (type == "clock")
    store_clock(rk, r);
  else if (type == "buckets")
    store_buckets(rk, r);
  else if (type == "graph")
    store_graph(rk, r);
  else if (type == "settings")
    store_settings(r);
  else if (type == "placement")
    store_placement(rk, r, offset);
  else if (type == "rank_end")
    store_rank_end(rk, r, offset);
  else if (type == "stacks")
    store_stacks(rk, r, offset);
  else if (type == "collective") {
    CollectiveRow row = collective_from_entry(r.at("entry"), rank);
    row.iteration = shifted(row.iteration, iteration_shift(rank));
    store_collective(row, "stream", offset);
  } else if (type == "process_group") {
    GroupRow g;
    g.rank = rank;
    g.pg_id = r.value("pg_id", int64_t{0});
    g.name = r.value("name", std::string());
    g.desc = r.value("desc", std::string());
    g.ranks = r.value("ranks", std::vector<int>());
    store_group(g);
  } else if (type == "zero_partition") {
    // A later partition (a new optimizer) replaces the earlier one.
    Statement s = db_.prepare("INSERT OR REPLACE INTO zero_shards(rank, param, name, numel, owner) VALUES(?,?,?,?,?)");
    for (const auto& p : r.at("params")) {
      s.bind(1, rk).bind(2, p.at(0).get<int64_t>()).bind(3, p.at(1).get<std::string>());
      s.bind(4, p.at(2).get<int64_t>()).bind(5, p.at(3).get<int64_t>());
      s.step();
      s.reset();
    }
  } else if (type == "flight_dump") {
    Statement s = db_.prepare(
        "INSERT INTO flight_dumps(rank, t_ns, reason, trigger, file, source, stall_ns, stall_end_ns) "
        "VALUES(?,?,?,?,?,'stream',?,?)");
    s.bind(1, rk).bind(2, r.value("t_ns", int64_t{0}) + offset).bind(3, r.value("reason", std::string()));
    s.bind(4, r.value("trigger", std::string())).bind(5, r.value("file", std::string()));
    const int64_t stall = r.value("stall_ns", int64_t{0});
    s.bind(6, stall).bind_optional(7, stall > 0 ? r.value("stall_end_ns", int64_t{0}) + offset : -1);
    s.step();
  } else {
    log::warn("run store: unknown record type '{}' from rank {}; skipped", type, rank);
  }
}

// Settings a rank learns once the job runs (a PyTorch script's DDP bucket caps): merged
// into the run's config, where the launcher's options are.
void RunStoreWriter::store_settings(const nlohmann::json& r) {
  const auto& values = r.at("values");
  if (!values.is_object()) throw nlohmann::json::type_error::create(302, "\"values\" must be an object", &r);
  Statement read = db_.prepare("SELECT config_json FROM runs WHERE run_id = 1");
  nlohmann::json config = nlohmann::json::object();
  if (read.step()) {
    try {
      config = nlohmann::json::parse(read.column_text(0));
    } catch (const nlohmann::json::exception&) {
    }
  }
  if (!config.is_object()) config = nlohmann::json::object();
  config.update(values);
  Statement write = db_.prepare("UPDATE runs SET config_json = ? WHERE run_id = 1");
  write.bind(1, config.dump());
  write.step();
  // The world as the ranks' launcher says it, for a collector started without knowing it
  // (`ddpscope-cli collect`): it only grows.
  const auto world = r.find("world_size");
  if (world != r.end() && world->is_number_integer() && world->get<int64_t>() >= 1 &&
      world->get<int64_t>() <= kMaxWorldSize) {
    Statement grow = db_.prepare("UPDATE runs SET world_size = ? WHERE run_id = 1 AND world_size < ?");
    grow.bind(1, world->get<int64_t>()).bind(2, world->get<int64_t>());
    grow.step();
  }
  // The backend the script's process group uses: the launcher knew only "torch".
  const auto backend = r.find("backend");
  if (backend != r.end() && backend->is_string() && !backend->get<std::string>().empty()) {
    Statement set = db_.prepare("UPDATE runs SET backend = ? WHERE run_id = 1");
    set.bind(1, backend->get<std::string>());
    set.step();
  }
}

void RunStoreWriter::store_metric(int64_t rk, const nlohmann::json& r) {
  // SQLite stores a NaN REAL as NULL: a NaN is kept as the text 'nan' (infinities are
  // REALs). RunStoreReader::metrics reads both back.
  const double value = json_field(r, "value");
  insert_metric_.bind(1, rk)
      .bind_optional(2, shifted(r.value("iteration", int64_t{-1}), iteration_shift(static_cast<int>(rk))))
      .bind(3, r.value("name", std::string()));
  if (std::isnan(value)) {
    insert_metric_.bind(4, std::string("nan"));
  } else {
    insert_metric_.bind(4, value);
  }
  insert_metric_.step();
  insert_metric_.reset();
}

void RunStoreWriter::store_rank(int64_t rk, const nlohmann::json& r) {
  Statement s = db_.prepare("UPDATE ranks SET host = ?, pid = ?, device = ? WHERE rank = ?");
  s.bind(1, r.value("host", std::string()))
      .bind(2, r.value("pid", int64_t{0}))
      .bind(3, r.value("device", std::string("cpu")))
      .bind(4, rk);
  s.step();
}

void RunStoreWriter::store_clock(int64_t rk, const nlohmann::json& r) {
  Statement s = db_.prepare("INSERT INTO clock_samples(rank, t_local_ns, offset_ns, rtt_ns) VALUES(?,?,?,?)");
  const int64_t offset = r.value("offset_ns", int64_t{0}), rtt = r.value("rtt_ns", int64_t{0});
  s.bind(1, rk).bind(2, r.value("t_local_ns", int64_t{0})).bind(3, offset).bind(4, rtt);
  s.step();
  Statement u = db_.prepare(
      "UPDATE ranks SET clock_offset_ns = ?, clock_rtt_ns = ?, clock_uncertainty_ns = ? "
      "WHERE rank = ?");
  u.bind(1, offset).bind(2, rtt).bind_optional(3, r.value("uncertainty_ns", int64_t{-1})).bind(4, rk);
  u.step();
}

void RunStoreWriter::store_buckets(int64_t rk, const nlohmann::json& r) {
  const int64_t gen = r.value("generation", int64_t{0});
  Statement b = db_.prepare(
      "INSERT OR REPLACE INTO buckets(rank, generation, bucket, bytes, num_params, first_param, "
      "last_param, params) VALUES(?,?,?,?,?,?,?,?)");
  for (const auto& x : r["buckets"]) {
    const auto& params = x["params"];
    b.bind(1, rk)
        .bind(2, gen)
        .bind(3, x.value("bucket", int64_t{0}))
        .bind(4, x.value("bytes", int64_t{0}))
        .bind(5, static_cast<int64_t>(params.size()))
        .bind_optional(6, params.empty() ? -1 : params.front().get<int64_t>())
        .bind_optional(7, params.empty() ? -1 : params.back().get<int64_t>())
        .bind(8, params.dump());
    b.step();
    b.reset();
  }
  Statement p = db_.prepare(
      "INSERT OR REPLACE INTO params(rank, generation, param_index, name, shape, numel, dtype, "
      "bucket, offset) VALUES(?,?,?,?,?,?,?,?,?)");
  for (const auto& x : r["params"]) {
    int64_t numel = 1;
    for (const auto& d : x["shape"])
      numel *= d.get<int64_t>();
    p.bind(1, rk)
        .bind(2, gen)
        .bind(3, x.value("index", int64_t{0}))
        .bind(4, x.value("name", std::string()))
        .bind(5, x["shape"].dump())
        .bind(6, numel)
        .bind(7, x.value("dtype", std::string()))
        .bind_optional(8, x.value("bucket", int64_t{-1}))
        .bind(9, x.value("offset", int64_t{0}));
    p.step();
    p.reset();
  }
}

void RunStoreWriter::store_graph(int64_t rk, const nlohmann::json& r) {
  const int64_t ctx = r.value("ctx_id", int64_t{-1}), iter = r.value("iteration", int64_t{0});
  Statement n = db_.prepare(
      "INSERT OR REPLACE INTO graph_nodes(rank, ctx_id, iteration, node_id, op, kind, deps, "
      "sequence_nr, msg_id, peer) VALUES(?,?,?,?,?,?,?,?,?,?)");
  for (const auto& x : r["nodes"]) {
    // Send and recv nodes (schema 3) add their autograd message id and peer.
    const bool rpc_end = x.size() >= 7;
    n.bind(1, rk)
        .bind(2, ctx)
        .bind(3, iter)
        .bind(4, x[0].get<int64_t>())
        .bind(5, x[1].get<std::string>())
        .bind(6, x[2].get<std::string>())
        .bind(7, x[3].get<int64_t>())
        .bind(8, x[4].get<int64_t>())
        .bind_optional(9, rpc_end ? x[5].get<int64_t>() : -1)
        .bind_optional(10, rpc_end ? x[6].get<int64_t>() : -1);
    n.step();
    n.reset();
  }
  Statement e = db_.prepare("INSERT INTO graph_edges(rank, ctx_id, iteration, src, dst, input_nr) VALUES(?,?,?,?,?,?)");
  for (const auto& x : r["edges"]) {
    e.bind(1, rk)
        .bind(2, ctx)
        .bind(3, iter)
        .bind(4, x[0].get<int64_t>())
        .bind(5, x[1].get<int64_t>())
        .bind(6, x[2].get<int64_t>());
    e.step();
    e.reset();
  }
}

}  // namespace ddpscope::probes

namespace ddpscope::probes {
namespace {

nlohmann::json sizes_json(const std::vector<std::vector<int64_t>>& sizes) { return sizes; }

nlohmann::json frames_json(const std::vector<StackFrame>& frames) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : frames)
    out.push_back({{"name", f.name}, {"filename", f.file}, {"line", f.line}});
  return out;
}

}  // namespace

// One record: added, or an existing one moved on to a later state (a streamed record and
// a dump's copy of it arrive in either order; the later state wins).
void RunStoreWriter::store_collective(const CollectiveRow& r, const std::string& source, int64_t offset) {
  if (!upsert_collective_.valid()) {
    upsert_collective_ = db_.prepare(R"sql(
INSERT INTO collectives(rank, pg_id, record_id, pg_name, pg_desc, collective_seq, p2p_seq, op, profiling_name,
  input_sizes, output_sizes, input_dtypes, output_dtypes, state, t_created_ns, t_started_ns, t_completed_ns,
  timeout_ms, phase, iteration, frames, source)
VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
ON CONFLICT(rank, pg_id, record_id) DO UPDATE SET state = excluded.state, t_started_ns = excluded.t_started_ns,
  t_completed_ns = excluded.t_completed_ns,
  frames = CASE WHEN excluded.frames != '[]' THEN excluded.frames ELSE collectives.frames END
WHERE (CASE excluded.state WHEN 'completed' THEN 2 WHEN 'started' THEN 1 ELSE 0 END) >=
      (CASE collectives.state WHEN 'completed' THEN 2 WHEN 'started' THEN 1 ELSE 0 END))sql");
  }
  const auto time = [&](int64_t t) { return t > 0 ? t + offset : int64_t{-1}; };
  Statement& s = upsert_collective_;
  s.bind(1, int64_t{r.rank})
      .bind(2, r.pg_id)
      .bind(3, r.record_id)
      .bind(4, r.pg_name)
      .bind(5, r.pg_desc)
      .bind_optional(6, r.collective_seq)
      .bind_optional(7, r.p2p_seq)
      .bind(8, r.op)
      .bind(9, r.profiling_name)
      .bind(10, sizes_json(r.input_sizes).dump())
      .bind(11, sizes_json(r.output_sizes).dump())
      .bind(12, nlohmann::json(r.input_dtypes).dump())
      .bind(13, nlohmann::json(r.output_dtypes).dump())
      .bind(14, r.state)
      .bind_optional(15, time(r.t_created_ns))
      .bind_optional(16, time(r.t_started_ns))
      .bind_optional(17, time(r.t_completed_ns))
      .bind(18, r.timeout_ms)
      .bind(19, r.phase)
      .bind_optional(20, r.iteration)
      .bind(21, frames_json(r.frames).dump())
      .bind(22, source);
  s.step();
  s.reset();
}

void RunStoreWriter::store_group(const GroupRow& g) {
  Statement s =
      db_.prepare("INSERT OR REPLACE INTO process_groups(rank, pg_id, name, description, ranks) VALUES(?,?,?,?,?)");
  s.bind(1, int64_t{g.rank}).bind(2, g.pg_id).bind(3, g.name).bind(4, g.desc).bind(5, nlohmann::json(g.ranks).dump());
  s.step();
}

void RunStoreWriter::store_flight_dump(const FlightDump& dump, const std::string& source, bool times_are_run_clock) {
  db_.exec("BEGIN");
  try {
    ensure_rank(dump.rank);
    int64_t offset = 0;
    if (!times_are_run_clock) {
      Statement o = db_.prepare("SELECT clock_offset_ns FROM ranks WHERE rank = ?");
      o.bind(1, int64_t{dump.rank});
      if (o.step()) offset = o.column_int64(0);
    }
    for (const GroupRow& g : dump.groups)
      store_group(g);
    for (const CollectiveRow& r : dump.entries)
      store_collective(r, source, offset);
    Statement d = db_.prepare(
        "INSERT INTO flight_dumps(rank, t_ns, reason, trigger, file, source, stall_ns, stall_end_ns) "
        "VALUES(?,?,?,?,?,?,?,?)");
    d.bind(1, int64_t{dump.rank})
        .bind_optional(2, dump.dump_time_ns > 0 ? dump.dump_time_ns + offset : -1)
        .bind(3, dump.reason)
        .bind(4, dump.trigger)
        .bind(5, dump.path)
        .bind(6, source)
        .bind(7, dump.stall_ns)
        .bind_optional(8, dump.stall_ns > 0 ? dump.stall_end_ns + offset : -1);
    d.step();
    db_.exec("COMMIT");
  } catch (...) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
}

}  // namespace ddpscope::probes
