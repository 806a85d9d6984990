// Flight-recorder records as readers use them: from a run file's `collectives` table, from
// a dump ddpscope wrote beside a run file, or from PyTorch's flight-recorder dumps (the
// JSON form: `version`, `pg_config`, `entries` with `record_id`, `process_group`,
// `collective_seq_id`, `p2p_seq_id`, `profiling_name`, `input_sizes`, `output_sizes`,
// `input_dtypes`, `output_dtypes`, `state`, `time_*_ns`, `timeout_ms`, `frames`, ...).
// Both dumps share one form (flight_recorder.h writes PyTorch's), so one parser reads them.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ddpscope::probes {

struct StackFrame {
  std::string name, file;  // name: the function
  int64_t line = 0;
  std::string code;  // the source line, when the rank could read it (stack captures)
};

struct CollectiveRow {
  int rank = 0;  // global rank of the process that recorded it
  int64_t pg_id = 0;
  int64_t record_id = 0;
  std::string pg_name, pg_desc;  // the group's name is the same on every rank
  int64_t collective_seq = -1;   // -1: a point-to-point op
  int64_t p2p_seq = -1;          // -1: a collective
  std::string op;                // allreduce, all_reduce, send, ... ("nccl:" and peers removed)
  std::string profiling_name;    // as recorded: "ddpscope:allreduce", "nccl:send 0->1"
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;
  std::vector<std::string> input_dtypes, output_dtypes;
  std::string state;                                               // scheduled | started | completed
  int64_t t_created_ns = 0, t_started_ns = 0, t_completed_ns = 0;  // 0: not reached
  int64_t timeout_ms = 0;
  std::string phase;
  int64_t iteration = -1;
  std::vector<StackFrame> frames;
  // How the run file got it first: stream (shipped while the job ran), dump (a dump file
  // the rank wrote), torch (PyTorch's dumps imported). A rank whose last records came
  // only by its dump could not reach the collector then.
  std::string source = "dump";
  // Point-to-point ops: the two ends in the group's numbering, from "send 0->1" /
  // "recv 1<-0" (-1: not said), and the group's last collective number when it was made.
  int p2p_src = -1, p2p_dst = -1;
  int64_t last_collective_seq = -1;
  bool retired = false;  // the recorder let go of it (finished, or timed out)

  bool is_p2p() const { return collective_seq < 0; }
  // 0 scheduled, 1 started, 2 completed (-1: unknown).
  int state_order() const;
};

struct GroupRow {
  int rank = 0;  // the process that described it
  int64_t pg_id = 0;
  std::string name, desc;
  std::vector<int> ranks;  // global ranks, in group order
};

struct FlightDumpRow {
  int rank = 0;
  int64_t t_ns = 0;
  std::string reason;   // shown, never parsed
  std::string trigger;  // timeout | signal | sigterm ("": not said, as in PyTorch's dumps)
  std::string file;
  int64_t stall_ns = 0;         // the longest time the process did not run (0: none seen)
  int64_t stall_end_ns = 0;     // when that stall ended
  std::string source = "dump";  // stream: shipped while the job ran; dump: read from its file
};

// One rank's dump file.
struct FlightDump {
  int rank = -1;
  std::string path;
  std::string form = "json";                 // json | pickle (what TORCH_FR_DUMP_TEMP_FILE receives)
  std::string version, producer;             // producer "ddpscope", or "" (PyTorch's)
  int version_major = 0, version_minor = 0;  // "2.10": 2 and 10
  std::string comm_lib_version;              // "2.28.9" (NCCL's); older dumps: nccl_version
  // False when no entry ever left "scheduled" (gloo's recorder tracks no start or end):
  // then an entry's `retired` is what says it finished, and the reader marks those
  // entries completed.
  bool states_tracked = true;
  int64_t dump_time_ns = 0;
  std::string reason;
  std::string trigger;  // as FlightDumpRow's
  int64_t stall_ns = 0, stall_end_ns = 0;
  std::vector<GroupRow> groups;
  std::vector<CollectiveRow> entries;
};

// What a hang is diagnosed from: every rank's records, the groups, the dumps.
struct FlightData {
  std::map<int, std::vector<CollectiveRow>> by_rank;  // each rank's, by (pg_id, record_id)
  std::vector<GroupRow> groups;                       // as each rank described them
  std::vector<FlightDumpRow> dumps;
  int world_size = 0;
  bool empty() const { return by_rank.empty(); }
  // Adds a dump's records (a later state wins over an earlier copy of a record).
  void add(const FlightDump& dump, int64_t clock_offset_ns = 0);
  void add(FlightDump&& dump, int64_t clock_offset_ns = 0);  // takes its rows
  void sort();
  // Ranks below world_size of which neither records nor a dump are held.
  std::vector<int> ranks_without_records() const;
};

// "3", "1, 5 and 7", "2..127" (runs of three or more as ranges): a list that stays short
// whatever the world's size.
std::string rank_ranges_text(const std::vector<int>& sorted_ranks);

// A send's or receive's two ends from its profiling name ("nccl:send 0->1" is src 0 to
// dst 1; "nccl:recv 1<-0" is dst 1 from src 0), in the group's numbering; left -1 when
// the name does not say.
void parse_p2p_ends(CollectiveRow& row);

// One entry of a dump (or of a streamed record) as a row. Throws nlohmann::json's
// exceptions on missing or mistyped fields.
CollectiveRow collective_from_entry(const nlohmann::json& entry, int rank);

// Reads a dump as PyTorch writes it (flight_dump_reader.cpp): the JSON form (keys in
// any order: PyTorch's are sorted, so "entries" comes first) or the pickle, plain or
// gzipped, streamed entry by entry. The rank comes from the file's "rank" field (ddpscope's
// dumps), else from the digits at the end of its name (nccl_trace_rank_3,
// x.fr_rank_3.json, rank_3.pkl), else fallback_rank. Throws RunStoreError naming the file
// and what was wrong: not a dump (and what it is instead), an unknown major version, a
// malformed entry (its index and field).
FlightDump read_flight_dump(const std::string& path, int fallback_rank = -1);

// "" when the file is a flight-recorder dump, else why not ("a PyTorch profiler trace",
// "a run file", "JSON without version, pg_config or entries", ...): read as far as needed
// to tell (PyTorch's sorted keys tell at the first key), never guessed from a prefix.
std::string why_not_flight_dump(const std::string& path);
bool looks_like_flight_dump(const std::string& path);

// The dump files among inputs: files as given, folders expanded to the files in them
// (not sub-folders) that are dumps, sorted. Files of a folder that are not dumps are left
// out, each with the reason in *skipped ("name: why"). Throws RunStoreError for an input
// that does not exist, or a folder with no dump in it (naming what it holds).
std::vector<std::string> flight_dump_inputs(const std::vector<std::string>& inputs,
                                            std::vector<std::string>* skipped = nullptr);

// The dumps in a folder, for callers that take a folder of dumps or of profiler traces
// (`import-torch`, the app): empty when it holds no dump, or holds profiler traces (then
// it is a folder of traces). *skipped as flight_dump_inputs'.
std::vector<std::string> dumps_in_folder(const std::string& folder, std::vector<std::string>* skipped = nullptr);

// Dumps written beside a run file (RUN.fr_rank_<R>.json) that are still there.
std::vector<std::string> flight_dumps_beside(const std::string& run_file);

}  // namespace ddpscope::probes
