#include "run_store_writer.h"

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "run_store_schema.h"

namespace ddpscope::probes {

std::string iso_time_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

RunStoreWriter::RunStoreWriter(const std::string& path)
    : db_(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX) {
  db_.exec("PRAGMA journal_mode=WAL");
  db_.exec("PRAGMA synchronous=NORMAL");
  create_or_migrate(db_);
  insert_span_ = db_.prepare(
      "INSERT INTO spans(rank, thread, kind, name_id, t_begin_ns, t_end_ns, iteration, bucket, "
      "param, bytes, peer, seq, ctx_id, msg_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  insert_name_ = db_.prepare("INSERT INTO names(name) VALUES(?)");
  upsert_thread_ =
      db_.prepare("INSERT OR REPLACE INTO threads(rank, thread, tid, name) VALUES(?,?,?,?)");
  update_rank_counts_ = db_.prepare(
      "UPDATE ranks SET events_received = events_received + ?, batches_received = "
      "batches_received + 1, events_dropped = max(events_dropped, ?) WHERE rank = ?");
  ensure_rank_ = db_.prepare("INSERT OR IGNORE INTO ranks(rank) VALUES(?)");
  insert_metric_ = db_.prepare("INSERT INTO metrics(rank, iteration, name, value) VALUES(?,?,?,?)");
  Statement names = db_.prepare("SELECT name_id, name FROM names");
  while (names.step())
    name_ids_[names.column_text(1)] = names.column_int64(0);
}

RunStoreWriter::~RunStoreWriter() {
  try {
    // Fold the WAL back in so the finished file stands alone.
    db_.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch (...) {
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

void RunStoreWriter::end_run(const std::string& status, const std::string& message,
                             int failed_rank) {
  Statement s = db_.prepare(
      "UPDATE runs SET status = ?, message = ?, failed_rank = ?, ended_at = ? WHERE run_id = 1");
  s.bind(1, status).bind(2, message).bind_optional(3, failed_rank).bind(4, iso_time_now());
  s.step();
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

void RunStoreWriter::set_rejected(uint64_t batches) {
  Statement s = db_.prepare("UPDATE runs SET rejected_batches = ? WHERE run_id = 1");
  s.bind(1, static_cast<int64_t>(batches));
  s.step();
}

int64_t RunStoreWriter::name_id(const std::string& name) {
  if (auto it = name_ids_.find(name); it != name_ids_.end()) return it->second;
  insert_name_.bind(1, name);
  insert_name_.step();
  insert_name_.reset();
  const int64_t id = sqlite3_last_insert_rowid(db_.handle());
  name_ids_.emplace(name, id);
  return id;
}

void RunStoreWriter::write(const EventBatch& batch) {
  db_.exec("BEGIN");
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
    for (const BatchEvent& e : batch.events) {
      const auto kind = static_cast<Kind>(e.kind);
      const bool rpc = kind == Kind::RpcSend || kind == Kind::RpcRecv || kind == Kind::DistBackward;
      Statement& s = insert_span_;
      s.bind(1, rank)
          .bind(2, int64_t{e.thread})
          .bind(3, int64_t{e.kind})
          .bind(4, ids[e.name])
          .bind(5, e.t_begin_ns + offset)
          .bind(6, e.t_end_ns + offset)
          .bind_optional(7, e.iteration)
          .bind_optional(8, e.bucket)
          .bind_optional(9, e.param)
          .bind_optional(10, e.bytes)
          .bind_optional(11, e.peer)
          .bind_optional(12, rpc ? -1 : e.id)
          .bind_optional(13, rpc ? e.id : -1)
          .bind_optional(14, rpc ? e.id2 : -1);
      s.step();
      s.rewind();
    }
    for (const auto& r : batch.records)
      write_record(batch.rank, r);
    update_rank_counts_.bind(1, static_cast<int64_t>(batch.events.size()))
        .bind(2, static_cast<int64_t>(batch.dropped_total))
        .bind(3, rank);
    update_rank_counts_.step();
    update_rank_counts_.reset();
    db_.exec("COMMIT");
    events_written_ += static_cast<int64_t>(batch.events.size());
  } catch (...) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
}

void RunStoreWriter::write_record(int rank, const std::string& text) {
  nlohmann::json r;
  try {
    r = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "[ddpscope] run store: rank %d sent a malformed record (%s); skipped\n",
                 rank, e.what());
    return;
  }
  try {
    store_record(rank, r);
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr,
                 "[ddpscope] run store: rank %d sent a record with bad fields (%s); skipped\n",
                 rank, e.what());
  }
}

void RunStoreWriter::store_record(int rank, const nlohmann::json& r) {
  const std::string type = r.value("type", "");
  const auto rk = int64_t{rank};
  if (type == "metric") {
    insert_metric_.bind(1, rk)
        .bind_optional(2, r.value("iteration", int64_t{-1}))
        .bind(3, r.value("name", std::string()))
        .bind(4, r.value("value", 0.0));
    insert_metric_.step();
    insert_metric_.reset();
  } else if (type == "rank") {
    Statement s = db_.prepare("UPDATE ranks SET host = ?, pid = ?, device = ? WHERE rank = ?");
    s.bind(1, r.value("host", std::string()))
        .bind(2, r.value("pid", int64_t{0}))
        .bind(3, r.value("device", std::string("cpu")))
        .bind(4, rk);
    s.step();
  } else if (type == "clock") {
    Statement s = db_.prepare(
        "INSERT INTO clock_samples(rank, t_local_ns, offset_ns, rtt_ns) VALUES(?,?,?,?)");
    const int64_t offset = r.value("offset_ns", int64_t{0}), rtt = r.value("rtt_ns", int64_t{0});
    s.bind(1, rk).bind(2, r.value("t_local_ns", int64_t{0})).bind(3, offset).bind(4, rtt);
    s.step();
    Statement u =
        db_.prepare("UPDATE ranks SET clock_offset_ns = ?, clock_rtt_ns = ? WHERE rank = ?");
    u.bind(1, offset).bind(2, rtt).bind(3, rk);
    u.step();
  } else if (type == "buckets") {
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
  } else if (type == "graph") {
    const int64_t ctx = r.value("ctx_id", int64_t{-1}), iter = r.value("iteration", int64_t{0});
    Statement n = db_.prepare(
        "INSERT OR REPLACE INTO graph_nodes(rank, ctx_id, iteration, node_id, op, kind, deps, "
        "sequence_nr) VALUES(?,?,?,?,?,?,?,?)");
    for (const auto& x : r["nodes"]) {
      n.bind(1, rk)
          .bind(2, ctx)
          .bind(3, iter)
          .bind(4, x[0].get<int64_t>())
          .bind(5, x[1].get<std::string>())
          .bind(6, x[2].get<std::string>())
          .bind(7, x[3].get<int64_t>())
          .bind(8, x[4].get<int64_t>());
      n.step();
      n.reset();
    }
    Statement e = db_.prepare(
        "INSERT INTO graph_edges(rank, ctx_id, iteration, src, dst, input_nr) VALUES(?,?,?,?,?,?)");
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
  } else {
    std::fprintf(stderr, "[ddpscope] run store: unknown record type '%s' from rank %d; skipped\n",
                 type.c_str(), rank);
  }
}

}  // namespace ddpscope::probes
