// The flight recorder: every process group keeps, on every rank, a ring buffer of its
// recent collectives as records (what PyTorch's NCCL flight recorder keeps), so a hang is
// diagnosed from data: which collective of which group each rank scheduled, started and
// completed, with its sizes and dtypes.
//
//   FlightRecorder& fr = FlightRecorder::create({.name = "world", .ranks = {0, 1}});
//   int64_t id = fr.schedule({.op = "allreduce", .collective_seq = 7, ...});
//   fr.start(id);  ...  fr.complete(id);
//
// Records stream into the run file as the shipper runs (changed ones only, so a record
// that went from scheduled to completed between two batches is sent once). A timeout
// dumps every group's buffer (dump_all): into a file beside the run file, in the JSON form
// of PyTorch's flight-recorder dumps, so it survives a collector that is gone; the run
// store merges it on its next read. A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT, SIGTERM) writes the same file from the signal handler: the writer allocates
// nothing and takes no lock.
//
// DDPSCOPE_FR_BUFFER_SIZE sets the records each group keeps (default 2000; 0: off).
// Thread-safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ddpscope::probes {

enum class CollectiveState : uint8_t { Scheduled = 0, Started = 1, Completed = 2 };
const char* collective_state_name(CollectiveState s);

// The shape of a collective's tensors on one side: the first tensor's shape, how many
// tensors, and whether all have that shape (allgather's outputs do; a coalesced
// allreduce's tensors need not: then only the total count of elements is exact).
struct TensorsSummary {
  static constexpr int kMaxDims = 6;
  int32_t count = 0;  // tensors; 0 for none (a barrier)
  int32_t ndim = 0;
  int64_t dims[kMaxDims] = {};
  bool same_shape = true;
  int64_t total_numel = 0;
  const char* dtype = "";  // static storage: the tensors' dtype name
};

struct CollectiveRecord {
  int64_t record_id = -1;        // per group, from 0
  int64_t collective_seq = -1;   // collectives of the group, from 0 (-1: a point-to-point op)
  int64_t p2p_seq = -1;          // point-to-point ops of the group, from 0 (-1: a collective)
  const char* op = "";           // static storage: allreduce, broadcast, send, ...
  TensorsSummary input, output;  // output.count 0: in place (the outputs are the inputs)
  int32_t peer = -1;             // send/recv: the other rank, in the group's numbering
  CollectiveState state = CollectiveState::Scheduled;
  int64_t t_created_ns = 0;  // CLOCK_MONOTONIC; 0: not yet
  int64_t t_started_ns = 0;
  int64_t t_completed_ns = 0;
  int64_t timeout_ms = 0;
  const char* phase = "";  // static storage: the trainer's phase when it was scheduled
  int32_t iteration = -1;
};

struct GroupDescription {
  std::string name = "world";    // "world", "world[0,2]"
  std::string desc = "default";  // what the group is for
  std::vector<int> ranks;        // global ranks of the members, in group order
  int rank_in_group = 0;
};

class FlightRecorder {
 public:
  // A recorder for a new group, kept for the life of the process (a group's records are
  // wanted most when something went wrong, often after its owner is gone).
  static FlightRecorder& create(GroupDescription group);
  // Every group's recorder, in creation order.
  static std::vector<FlightRecorder*> all();

  int pg_id() const { return pg_id_; }
  const GroupDescription& group() const { return group_; }
  bool on() const { return capacity_ > 0; }

  // A new record in state scheduled (t_created now); returns its record id (-1: off).
  int64_t schedule(const CollectiveRecord& record);
  void start(int64_t record_id);
  void complete(int64_t record_id);
  // The records still held, oldest first.
  std::vector<CollectiveRecord> records() const;

  // Records changed since the last call, as run-file records (records.h), and the group's
  // description the first time. The shipper sends them with each batch.
  // clock_skew_ns: the shipper's test hook, added to the times as to events' times.
  static std::vector<std::string> take_changes(int64_t clock_skew_ns = 0);
  // Writes every group's buffer to the dump file (set_dump_path) and queues a dump
  // record for the run file. reason: "timeout: ...". Returns the file written ("" when
  // none is configured or writing failed).
  // trigger: timeout (a watchdog: this rank was alive and waiting), signal, sigterm.
  // After a timeout every later dump keeps its trigger, reason and time (dump_time_ns).
  static std::string dump_all(const std::string& reason, const char* trigger = "timeout");
  // Where this process dumps. The first group created reads DDPSCOPE_FR_DUMP, a prefix
  // the rank and ".json" are appended to (the launcher sets "RUN.fr_rank_"), and installs
  // the fatal-signal dump; without it nothing is written to a file.
  static void set_dump_path(const std::string& path, int global_rank);
  // Installs the fatal-signal handlers that dump before the process dies (once).
  static void install_signal_dump();
  // A watchdog woke `late_ns` after the time it asked for: more than half a second means
  // the process was not running (stopped, starved of CPU). Dumps carry the longest such
  // stall and when it ended, so the verdict can tell a rank that waited from one that
  // could not run.
  static void note_stall(int64_t late_ns) noexcept;

 private:
  FlightRecorder(int pg_id, GroupDescription group, int64_t capacity);
  CollectiveRecord* find(int64_t record_id);  // under mutex_; null once evicted
  void mark_changed(int64_t record_id);

  const int pg_id_;
  const GroupDescription group_;
  const int64_t capacity_;
  mutable std::mutex mutex_;
  std::vector<CollectiveRecord> ring_;
  int64_t next_id_ = 0;
  std::vector<int64_t> changed_;
  bool described_ = false;
  friend struct FlightDumpWriter;
};

// The trainer's phase that new records carry: "forward", "backward", "optimizer", ...
// (static storage). Cheap: one relaxed store.
void set_phase(const char* phase) noexcept;
const char* current_phase() noexcept;

// The dump file name PyTorch-style readers expect the rank at the end of: RUN.fr_rank_<R>.json.
std::string flight_dump_path(const std::string& run_file, int rank);

}  // namespace ddpscope::probes
