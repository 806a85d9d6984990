// RunStoreWriter: the only writer of a run file. The collector owns one for a
// multi-rank job; a single process without a collector owns one directly.
//
// The file is in WAL mode, so readers (the CLI, the desktop app) can open it while it
// grows; each batch is one transaction through prepared statements. synchronous=NORMAL:
// a killed writer loses at most its open transaction, never the file.
//
// Thread-safety: one thread at a time.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <unordered_map>

#include "event_batch.h"
#include "flight_records.h"
#include "run_end.h"
#include "span_pack.h"
#include "sqlite_db.h"

namespace ddpscope::probes {

// The most ranks a run may have: past any job, short of a memory bomb. A settings record
// claiming more is not taken, and the collector refuses a batch from a rank past it.
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 20;

struct RunDescription {
  std::string config_json = "{}";
  int world_size = 1;
  std::string backend;
  std::string model;
};

class RunStoreWriter {
 public:
  // Creates the file (or opens a run file to append to it, migrating an older schema).
  explicit RunStoreWriter(const std::string& path);
  ~RunStoreWriter();

  // Starts the run: status "running".
  void begin_run(const RunDescription& run);
  // Stores one batch from a rank in one transaction; its times are moved onto the
  // collector's clock by batch.clock_offset_ns.
  void write(const EventBatch& batch);
  // The run's outcome (run_end.h), with the failed collective when its rank typed one.
  void end_run(const RunEnd& end);
  // status: finished | failed | stopped. failed_rank -1: none named. dead_rank: a rank
  // mpirun saw die by a signal (-1: none), and that signal ("signal 9, Killed").
  void end_run(const std::string& status, const std::string& message = {}, int failed_rank = -1, int dead_rank = -1,
               const std::string& dead_signal = {});
  // When the job ended on the run's clock (schema 13): the collector's CLOCK_MONOTONIC at its
  // end. Only a writer on the run clock's host says it (not an import).
  void set_ended_ns(int64_t ended_ns);
  // Each rank's process as the launcher saw it before ending the job (schema 14): a /proc
  // state letter or "gone", by rank.
  void set_rank_end_states(const std::map<int, std::string>& states);
  // Flight-recorder records from a dump file (flight_records.h): each row added, or an
  // existing one moved on to a later state; times moved onto the run's clock by each
  // rank's recorded offset unless times_are_run_clock. source: "dump" | "torch".
  void store_flight_dump(const FlightDump& dump, const std::string& source, bool times_are_run_clock = false);
  // A rank's events that never reached the file (its own count, when it could not ship).
  void add_dropped(int rank, uint64_t count);
  // Batches the collector refused (wrong token, malformed).
  void set_rejected(uint64_t batches);
  // A rank's events the collector refused one by one (they end before they begin, or its
  // clock offset overflows them): the metric collector.events_refused.
  void add_refused_events(int rank, uint64_t count);
  // Copies what the WAL holds into the file itself and empties the WAL; false when it
  // could not (the disk is full), and the WAL then holds the run's last part.
  bool fold_wal();
  int64_t events_written() const { return events_written_; }
  const std::string& path() const { return db_.path(); }

 private:
  // Spans per pack at most: the unit a window query decodes (a few hundred KB of spans).
  static constexpr size_t kPackSpans = 4096;
  // One pack of `events` (a thread's, of one tier: detail kinds or the others).
  void write_pack(int64_t rank, const std::vector<const BatchEvent*>& events, const std::vector<int64_t>& ids,
                  int64_t offset);
  void write_record(int rank, const std::string& json, int64_t offset);
  void write_message(int64_t rank, const BatchEvent& e, const std::string& name, int64_t offset);
  void store_record(int rank, const nlohmann::json& record, int64_t offset);
  void store_collective(const CollectiveRow& row, const std::string& source, int64_t offset);
  void store_group(const GroupRow& group);
  void store_metric(int64_t rank, const nlohmann::json& record);
  void store_rank(int64_t rank, const nlohmann::json& record);
  void store_clock(int64_t rank, const nlohmann::json& record);
  void store_buckets(int64_t rank, const nlohmann::json& record);  // and their parameters
  void store_graph(int64_t rank, const nlohmann::json& record);
  void store_settings(const nlohmann::json& record);
  // A rank's attempt starts ({"type":"placement", ...}: where its launcher placed it) or
  // ends ({"type":"rank_end", ...}): rows of `attempts` (run_store_attempts.cpp).
  void store_placement(int64_t rank, const nlohmann::json& record, int64_t offset);
  void store_rank_end(int64_t rank, const nlohmann::json& record, int64_t offset);
  void store_stacks(int64_t rank, const nlohmann::json& record, int64_t offset);
  // What a rank's iteration numbers are moved by: a restarted attempt continues the count.
  int64_t iteration_shift(int rank) const;
  static std::string name_key(const NameInfo& name);
  int64_t name_id(const NameInfo& name);
  void ensure_rank(int rank);

  SqliteDb db_;
  Statement insert_pack_, insert_name_, upsert_thread_, update_rank_counts_, ensure_rank_, insert_metric_,
      upsert_message_, upsert_collective_, insert_args_;
  // The batch being written's event arguments by event, while write() runs (null: none).
  const std::unordered_map<const BatchEvent*, const std::string*>* batch_args_ = nullptr;
  std::unordered_map<std::string, int64_t> name_ids_;
  std::unordered_map<int, bool> known_ranks_;
  int64_t events_written_ = 0;
  int64_t next_span_id_ = 1;  // the id the next span written gets (ids count from 1)
  std::vector<PackedSpan> pack_;
  int64_t max_iteration_ = 0;                           // of the spans stored so far
  std::unordered_map<int64_t, int64_t> attempt_shift_;  // attempt -> its iterations' shift
  std::unordered_map<int, int64_t> rank_shift_;         // rank -> its current attempt's shift
  std::vector<const BatchEvent*> structure_, detail_;   // a thread's run, split by tier
};

// Local time as ISO 8601, for the runs table.
std::string iso_time_now();

}  // namespace ddpscope::probes
