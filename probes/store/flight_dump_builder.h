// The SAX builder of a flight-recorder dump (flight_dump_reader.cpp): PyTorch's and
// ddpscope's keys (flight_dump_format.h) checked for their types, values charged against
// a budget, nesting bounded. Fed by RapidJSON (JsonAdapter) or by the pickle reader's
// replay. Internal to the store.
#pragma once

#include <rapidjson/reader.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/error.h"
#include "flight_dump_format.h"
#include "flight_records.h"
#include "pickle_reader.h"
#include "sqlite_db.h"

namespace ddpscope::probes::dump_sax {

namespace fk = flight_keys;

[[noreturn]] inline void bad_dump(const std::string& path, const std::string& why) {
  throw RunStoreError(detail::concat("'", path, "' is not a flight-recorder dump ddpscope can read: ", why), __FILE__,
                      __LINE__);
}

// Top-level keys of PyTorch's profiler traces: a file with one is a trace, not a dump.
inline bool profiler_trace_key(std::string_view k) {
  return k == "traceEvents" || k == "schemaVersion" || k == "deviceProperties" || k == "distributedInfo" ||
         k == "displayTimeUnit" || k == "baseTimeNanoseconds";
}

// Top-level keys only a dump has (PyTorch's and ddpscope's).
inline bool dump_key(std::string_view k) {
  return k == fk::entries || k == fk::pg_config || k == fk::pg_status || k == fk::version ||
         k == fk::comm_lib_version || k == fk::nccl_version || k == fk::nccl_comm_state;
}

enum class Field : uint8_t {
  None,
  RecordId,
  PgId,
  ProcessGroup,
  CollectiveSeq,
  P2pSeq,
  ProfilingName,
  InputSizes,
  OutputSizes,
  InputDtypes,
  OutputDtypes,
  State,
  TimeCreated,
  TimeStarted,
  TimeCompleted,
  TimeoutMs,
  IsP2p,
  Retired,
  Phase,
  Iteration,
  Frames,
  // top level
  Version,
  CommLib,
  Producer,
  Reason,
  Trigger,
  Rank,
  DumpTime,
  Stall,
  StallEnd,
  // pg_config's group
  GroupName,
  GroupDesc,
  GroupRanks,
  // a frame
  FrameName,
  FrameFile,
  FrameLine,
};

inline Field entry_field(std::string_view k) {
  static const std::array<std::pair<std::string_view, Field>, 20> fields{{
      {fk::record_id, Field::RecordId},
      {fk::pg_id, Field::PgId},
      {fk::process_group, Field::ProcessGroup},
      {fk::collective_seq_id, Field::CollectiveSeq},
      {fk::p2p_seq_id, Field::P2pSeq},
      {fk::profiling_name, Field::ProfilingName},
      {fk::input_sizes, Field::InputSizes},
      {fk::output_sizes, Field::OutputSizes},
      {fk::input_dtypes, Field::InputDtypes},
      {fk::output_dtypes, Field::OutputDtypes},
      {fk::state, Field::State},
      {fk::time_created_ns, Field::TimeCreated},
      {fk::time_started_ns, Field::TimeStarted},
      {fk::time_completed_ns, Field::TimeCompleted},
      {fk::timeout_ms, Field::TimeoutMs},
      {fk::is_p2p, Field::IsP2p},
      {fk::retired, Field::Retired},
      {fk::phase, Field::Phase},
      {fk::iteration, Field::Iteration},
      {fk::frames, Field::Frames},
  }};
  for (const auto& [name, f] : fields)
    if (name == k) return f;
  return Field::None;
}

inline Field top_field(std::string_view k) {
  if (k == fk::version) return Field::Version;
  if (k == fk::comm_lib_version || k == fk::nccl_version) return Field::CommLib;
  if (k == fk::producer) return Field::Producer;
  if (k == fk::dump_reason) return Field::Reason;
  if (k == fk::dump_trigger) return Field::Trigger;
  if (k == fk::rank) return Field::Rank;
  if (k == fk::dump_time_ns) return Field::DumpTime;
  if (k == fk::stall_ns) return Field::Stall;
  if (k == fk::stall_end_ns) return Field::StallEnd;
  return Field::None;
}

inline std::string_view field_name(Field f) {
  switch (f) {
    case Field::RecordId: return fk::record_id;
    case Field::PgId: return fk::pg_id;
    case Field::ProcessGroup: return fk::process_group;
    case Field::CollectiveSeq: return fk::collective_seq_id;
    case Field::P2pSeq: return fk::p2p_seq_id;
    case Field::ProfilingName: return fk::profiling_name;
    case Field::InputSizes: return fk::input_sizes;
    case Field::OutputSizes: return fk::output_sizes;
    case Field::InputDtypes: return fk::input_dtypes;
    case Field::OutputDtypes: return fk::output_dtypes;
    case Field::State: return fk::state;
    case Field::TimeCreated: return fk::time_created_ns;
    case Field::TimeStarted: return fk::time_started_ns;
    case Field::TimeCompleted: return fk::time_completed_ns;
    case Field::TimeoutMs: return fk::timeout_ms;
    case Field::Phase: return fk::phase;
    case Field::Iteration: return fk::iteration;
    case Field::Frames: return fk::frames;
    case Field::Version: return fk::version;
    case Field::Rank: return fk::rank;
    case Field::GroupRanks: return fk::group_ranks;
    default: return "a field";
  }
}

// Where the builder is in the document.
enum class Ctx : uint8_t {
  Root,
  Entries,    // the entries list
  Entry,      // one entry
  Sizes,      // input_sizes / output_sizes: a list of shapes
  Shape,      // one shape
  Strings,    // input_dtypes / output_dtypes / process_group
  Frames,     // frames: a list of frames
  Frame,      // one frame
  PgConfig,   // group name -> group
  PgGroup,    // one group's name, desc, ranks
  RanksList,  // ranks as a list (ddpscope's form)
  Skip,       // a value nobody reads, object or array
};

constexpr int64_t kTimeCap = int64_t{1} << 61;  // sums of times and offsets cannot overflow
// How far a dump may expand past its size on disk (values at 16 bytes and their text):
// real ones, pickled by PyTorch 2.11 or Python or written as JSON, expand 1.6 to 4.5
// times; a 10 MB file then stays within a few hundred MiB.
constexpr int64_t kExpansion = 32;
constexpr int kMaxNesting = 200;

// The SAX builder of a FlightDump. Every event returns false on the first problem, which
// error() then describes; PyTorch's field names are checked for their types.
class DumpBuilder final : public SaxSink {
 public:
  // budget: the bytes of values (16 a value, plus a string's length) the dump may expand
  // to; past it the read stops (see expansion_budget).
  DumpBuilder(FlightDump& d, bool probe, int64_t budget) : d_(d), probe_(probe), budget_(budget) {}

  const std::string& error() const { return error_; }
  bool saw_dump_key() const { return saw_dump_key_; }
  bool started() const { return started_; }
  int64_t entries() const { return entry_index_; }
  // For a pickle's streamed entries: they arrive before the root is replayed.
  void enter_entries() { stack_ = {{Ctx::Root}, {Ctx::Entries}}; }
  void leave_entries() { stack_.clear(); }

  bool Null() override { return charge(0) && scalar_null(); }
  bool Bool(bool b) override { return charge(0) && scalar_bool(b); }
  bool Int64(int64_t i) override { return charge(0) && scalar_int(i, false); }
  bool Uint64(uint64_t u) override {
    if (!charge(0)) return false;
    return u > static_cast<uint64_t>(INT64_MAX) ? fail("a number out of range")
                                                : scalar_int(static_cast<int64_t>(u), false);
  }
  bool Double(double x) override {
    if (!charge(0)) return false;
    if (stack_.empty()) return fail("it is a single value, not an object");
    if (!std::isfinite(x) || x < -9.2e18 || x > 9.2e18) {
      if (field_ == Field::None) return true;
      return fail_field("must be a finite number");
    }
    return scalar_int(static_cast<int64_t>(x), true);
  }
  bool String(std::string_view s) override;
  bool Key(std::string_view k) override;
  bool StartObject() override;
  bool EndObject() override;
  bool StartArray() override;
  bool EndArray() override;

 private:
  struct Level {
    Ctx ctx;
    int depth = 0;  // Skip: nesting inside the skipped value
  };
  Ctx top() const { return stack_.back().ctx; }
  bool fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  // RapidJSON's reader recurses a level per bracket: 100,000 of them (310 bytes of gzip)
  // ran out of stack. Dumps nest 5 levels.
  bool nest() {
    if (++nesting_ <= kMaxNesting) return true;
    return fail(detail::concat("it nests deeper than ", kMaxNesting, " levels: not a dump PyTorch writes"));
  }
  // Memory follows what the dump expands to, not its size on disk: a pickle's shared
  // references are replayed once per use, and a gzip inflates.
  bool charge(size_t text_bytes) {
    expanded_ += 16 + static_cast<int64_t>(std::min<size_t>(text_bytes, INT32_MAX));
    if (expanded_ <= budget_) return true;
    return fail(detail::concat("it expands to more than ", budget_ >> 20, " MiB of values (", kExpansion,
                               " times its size on disk and 64 MiB; PyTorch's dumps expand 2 to 5 times): its "
                               "shared references or its compression were made to exhaust memory, or it is damaged"));
  }
  std::string where() const {
    if (in_entry_) return detail::concat("entry ", entry_index_, ": ");
    return {};
  }
  bool fail_field(const std::string& why) {
    return fail(detail::concat(where(), "\"", field_name(field_), "\" ", why));
  }
  bool skip_value_start() {
    stack_.push_back({Ctx::Skip, 0});
    return true;
  }
  bool end_skipped();
  bool scalar_null();
  bool scalar_bool(bool b);
  bool scalar_int(int64_t i, bool from_double);
  bool finish_entry();

  FlightDump& d_;
  bool probe_;
  int64_t budget_, expanded_ = 0;
  int nesting_ = 0;
  std::vector<Level> stack_;
  Field field_ = Field::None;  // the key whose value comes next
  Ctx pending_ = Ctx::Root;    // the root key read was pg_config
  bool pending_entries_ = false;
  std::string error_;
  bool started_ = false, saw_dump_key_ = false, in_entry_ = false;
  int64_t entry_index_ = 0;
  CollectiveRow row_;
  bool has_name_ = false, has_seq_ = false, is_p2p_ = false, retired_ = false;
  std::vector<int64_t> shape_;
  std::vector<std::string> strings_;
  StackFrame frame_;
  GroupRow group_;
  std::string group_key_;
};

// RapidJSON's handler, forwarding to the builder.
struct JsonAdapter {
  SaxSink& s;
  bool Null() { return s.Null(); }
  bool Bool(bool b) { return s.Bool(b); }
  bool Int(int i) { return s.Int64(i); }
  bool Uint(unsigned u) { return s.Int64(u); }
  bool Int64(int64_t i) { return s.Int64(i); }
  bool Uint64(uint64_t u) { return s.Uint64(u); }
  bool Double(double d) { return s.Double(d); }
  bool RawNumber(const char*, rapidjson::SizeType, bool) { return false; }
  bool String(const char* p, rapidjson::SizeType n, bool) { return s.String({p, n}); }
  bool Key(const char* p, rapidjson::SizeType n, bool) { return s.Key({p, n}); }
  bool StartObject() { return s.StartObject(); }
  bool EndObject(rapidjson::SizeType) { return s.EndObject(); }
  bool StartArray() { return s.StartArray(); }
  bool EndArray(rapidjson::SizeType) { return s.EndArray(); }
};

}  // namespace ddpscope::probes::dump_sax
