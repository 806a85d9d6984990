// Flight-recorder dumps as PyTorch's writer (c10d's FlightRecorder) writes them, read by
// one SAX builder from either form:
//  - JSON (dump_json): nlohmann's dump() of a std::map, so keys sorted and no spaces:
//    {"comm_lib_version","entries":[...],"nccl_comm_state","pg_config","pg_status","version"};
//    "entries" is absent when the ring is empty; no "frames"; a time not yet seen is 0;
//    pg_status values are text ("30");
//  - the pickle (dump, what TORCH_FR_DUMP_TEMP_FILE receives on a timeout): torch's own
//    pickler, protocol 2, strings memoized, keys in insertion order with "entries" last,
//    "frames" per entry, a time not yet seen is None, pg_status values are integers.
// Both: "version" is "major.minor" ("2.10"), pg_config is keyed by group name with
// "ranks" as text ("[0, 1]"), pg_status is keyed by pg_id (numbered per process, so it
// differs between ranks for one group). gloo's recorder (PyTorch 2.8 on) leaves every
// entry "scheduled" with times 0 and writes one nameless group with no ranks.
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <string_view>

#include "ddpscope/error.h"
#include "flight_dump_format.h"
#include "flight_records.h"
#include "gz_stream.h"
#include "pickle_reader.h"
#include "sqlite_db.h"

namespace ddpscope::probes {
namespace {

namespace fs = std::filesystem;
namespace fk = flight_keys;

[[noreturn]] void bad_dump(const std::string& path, const std::string& why) {
  throw RunStoreError(detail::concat("'", path, "' is not a flight-recorder dump ddpscope can read: ", why), __FILE__,
                      __LINE__);
}

// Top-level keys of PyTorch's profiler traces: a file with one is a trace, not a dump.
bool profiler_trace_key(std::string_view k) {
  return k == "traceEvents" || k == "schemaVersion" || k == "deviceProperties" || k == "distributedInfo" ||
         k == "displayTimeUnit" || k == "baseTimeNanoseconds";
}

// Top-level keys only a dump has (PyTorch's and ddpscope's).
bool dump_key(std::string_view k) {
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

Field entry_field(std::string_view k) {
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

Field top_field(std::string_view k) {
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

std::string_view field_name(Field f) {
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

bool DumpBuilder::Key(std::string_view k) {
  if (!charge(k.size())) return false;
  if (stack_.empty()) return fail("it is a single value, not an object");
  switch (top()) {
    case Ctx::Root:
      if (profiler_trace_key(k))
        return fail(detail::concat("it is a PyTorch profiler trace (it has \"", k,
                                   "\"): import it with `ddpscope-cli import-torch`, as a trace"));
      if (dump_key(k)) {
        saw_dump_key_ = true;
        if (probe_) return false;  // decided: a dump
      }
      if (k == fk::entries) {
        field_ = Field::None;
        pending_entries_ = true;
      } else if (k == fk::pg_config) {
        pending_ = Ctx::PgConfig;
      }
      // pg_status (per process: the last collective enqueued, started, completed) says
      // nothing the entries do not: skipped.
      if (k != fk::entries && k != fk::pg_config) field_ = top_field(k);
      return true;
    case Ctx::Entry: field_ = entry_field(k); return true;
    case Ctx::Frame:
      field_ = k == "name"       ? Field::FrameName
               : k == "filename" ? Field::FrameFile
               : k == "line"     ? Field::FrameLine
                                 : Field::None;
      return true;
    case Ctx::PgConfig: group_key_ = std::string(k); return true;
    case Ctx::PgGroup:
      field_ = k == fk::group_name    ? Field::GroupName
               : k == fk::group_desc  ? Field::GroupDesc
               : k == fk::group_ranks ? Field::GroupRanks
                                      : Field::None;
      return true;
    case Ctx::Skip: return true;
    default: return fail("a key where a list was expected");
  }
}

bool DumpBuilder::StartObject() {
  if (!charge(0) || !nest()) return false;
  if (stack_.empty()) {
    if (started_) return fail("more than one document in the file");
    started_ = true;
    stack_.push_back({Ctx::Root});
    return true;
  }
  switch (top()) {
    case Ctx::Root:
      if (pending_ != Ctx::Root) {
        stack_.push_back({pending_});
        pending_ = Ctx::Root;
        return true;
      }
      if (pending_entries_) return fail("\"entries\" must be a list");
      if (field_ != Field::None) return fail_field("must not be an object");
      return skip_value_start();
    case Ctx::Entries:
      // What an entry holds in memory, however little its text says ("{}," gzips to nothing).
      if (!charge(sizeof(CollectiveRow))) return false;
      stack_.push_back({Ctx::Entry});
      in_entry_ = true;
      row_ = CollectiveRow{};
      row_.rank = d_.rank;
      has_name_ = has_seq_ = is_p2p_ = retired_ = false;
      field_ = Field::None;
      return true;
    case Ctx::Entry:
      if (field_ != Field::None) return fail_field("must not be an object");
      return skip_value_start();
    case Ctx::Frames:
      if (!charge(sizeof(StackFrame))) return false;
      stack_.push_back({Ctx::Frame});
      frame_ = {};
      field_ = Field::None;
      return true;
    case Ctx::PgConfig:
      stack_.push_back({Ctx::PgGroup});
      group_ = {};
      group_.rank = d_.rank;
      group_.pg_id = static_cast<int64_t>(d_.groups.size());
      group_.name = group_key_;
      field_ = Field::None;
      return true;
    case Ctx::Skip: ++stack_.back().depth; return true;
    default:
      if (field_ != Field::None) return fail_field("has an object where a value was expected");
      return skip_value_start();
  }
}

// The end of an object or list inside a skipped value: true when that is what it was.
bool DumpBuilder::end_skipped() {
  if (top() != Ctx::Skip) return false;
  if (stack_.back().depth-- == 0) {
    stack_.pop_back();
    field_ = Field::None;
  }
  return true;
}

bool DumpBuilder::EndObject() {
  --nesting_;
  if (stack_.empty()) return fail("unbalanced document");
  const Ctx c = top();
  if (end_skipped()) return true;
  stack_.pop_back();
  field_ = Field::None;
  switch (c) {
    case Ctx::Entry: return finish_entry();
    case Ctx::Frame: row_.frames.push_back(std::move(frame_)); return true;
    case Ctx::PgGroup:
      // gloo writes one nameless group with no ranks: it says nothing.
      if (!(group_.name.empty() && group_.ranks.empty())) d_.groups.push_back(std::move(group_));
      return true;
    default: return true;
  }
}

bool DumpBuilder::StartArray() {
  if (!charge(0) || !nest()) return false;
  if (stack_.empty()) {
    return fail(
        "it is a JSON list, not an object (a PyTorch profiler trace of the older list form? import it with "
        "`ddpscope-cli import-torch`)");
  }
  switch (top()) {
    case Ctx::Root:
      if (pending_entries_) {
        pending_entries_ = false;
        stack_.push_back({Ctx::Entries});
        return true;
      }
      if (pending_ != Ctx::Root) return fail("pg_config must be an object keyed by group");
      if (field_ != Field::None) return fail_field("must not be a list");
      return skip_value_start();
    case Ctx::Entries: return fail(detail::concat("entry ", entry_index_, " is a list, not an object"));
    case Ctx::Entry:
      switch (field_) {
        case Field::InputSizes:
        case Field::OutputSizes:
          (field_ == Field::InputSizes ? row_.input_sizes : row_.output_sizes).clear();
          stack_.push_back({Ctx::Sizes});
          return true;
        case Field::InputDtypes:
        case Field::OutputDtypes:
        case Field::ProcessGroup:
          strings_.clear();
          stack_.push_back({Ctx::Strings});
          return true;
        case Field::Frames: stack_.push_back({Ctx::Frames}); return true;
        case Field::None: return skip_value_start();
        default: return fail_field("must not be a list");
      }
    case Ctx::Sizes:
      shape_.clear();
      stack_.push_back({Ctx::Shape});
      return true;
    case Ctx::PgGroup:
      if (field_ == Field::GroupRanks) {
        group_.ranks.clear();
        stack_.push_back({Ctx::RanksList});
        return true;
      }
      return skip_value_start();
    case Ctx::Skip: ++stack_.back().depth; return true;
    default:
      if (field_ != Field::None && top() != Ctx::Frame) return fail_field("has a list where a value was expected");
      return skip_value_start();
  }
}

bool DumpBuilder::EndArray() {
  --nesting_;
  if (stack_.empty()) return fail("unbalanced document");
  const Ctx c = top();
  if (end_skipped()) return true;
  stack_.pop_back();
  switch (c) {
    case Ctx::Entries: field_ = Field::None; return true;
    case Ctx::Shape:
      (field_ == Field::InputSizes ? row_.input_sizes : row_.output_sizes).push_back(std::move(shape_));
      shape_.clear();
      return true;
    case Ctx::Strings:
      if (field_ == Field::InputDtypes) {
        row_.input_dtypes = std::move(strings_);
      } else if (field_ == Field::OutputDtypes) {
        row_.output_dtypes = std::move(strings_);
      } else {  // process_group: [name, desc]
        if (strings_.empty()) return fail_field("must be [name, description]");
        row_.pg_name = strings_[0];
        if (strings_.size() > 1) row_.pg_desc = strings_[1];
      }
      strings_.clear();
      field_ = Field::None;
      return true;
    default: field_ = Field::None; return true;
  }
}

bool DumpBuilder::String(std::string_view s) {
  if (!charge(s.size())) return false;
  if (stack_.empty()) return fail("it is a single value, not an object");
  switch (top()) {
    case Ctx::Root:
      if (pending_entries_) return fail("\"entries\" must be a list");
      if (pending_ != Ctx::Root) return fail("pg_config must be an object keyed by group");
      switch (field_) {
        case Field::Version: d_.version = s; break;
        case Field::CommLib: d_.comm_lib_version = s; break;
        case Field::Producer: d_.producer = s; break;
        case Field::Reason: d_.reason = s; break;
        case Field::Trigger: d_.trigger = s; break;
        case Field::None: break;
        default: return fail_field("must be a number");
      }
      field_ = Field::None;
      return true;
    case Ctx::Entry:
      switch (field_) {
        case Field::ProfilingName:
          row_.profiling_name = s;
          has_name_ = true;
          break;
        case Field::State: row_.state = s; break;
        case Field::Phase: row_.phase = s; break;
        case Field::None: break;
        default: {
          // Some writers quote numbers.
          int64_t v = 0;
          const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
          if (ec != std::errc() || end != s.data() + s.size() || s.empty())
            return fail_field(detail::concat("must be a number, not \"", s.substr(0, 40), "\""));
          return scalar_int(v, false);
        }
      }
      field_ = Field::None;
      return true;
    case Ctx::Strings: strings_.emplace_back(s); return true;
    case Ctx::Entries: return fail(detail::concat("entry ", entry_index_, " is text, not an object"));
    case Ctx::Frame:
      if (field_ == Field::FrameName) frame_.name = s;
      if (field_ == Field::FrameFile) frame_.file = s;
      field_ = Field::None;
      return true;
    case Ctx::PgGroup:
      if (field_ == Field::GroupName) group_.name = s;
      if (field_ == Field::GroupDesc) group_.desc = s;
      if (field_ == Field::GroupRanks) {  // "[0, 1]": PyTorch writes the list as text
        group_.ranks.clear();
        for (size_t i = 0; i < s.size();) {
          if (std::isdigit(static_cast<unsigned char>(s[i]))) {
            size_t end = i;
            while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])))
              ++end;
            if (end - i > 7) return fail_field(detail::concat("of group '", group_.name, "' has a rank out of range"));
            group_.ranks.push_back(std::stoi(std::string(s.substr(i, end - i))));
            i = end;
          } else if (s[i] == '[' || s[i] == ']' || s[i] == ',' || s[i] == ' ') {
            ++i;
          } else {
            return fail_field(
                detail::concat("of group '", group_.name, "' is not a list of ranks: \"", s.substr(0, 40), "\""));
          }
        }
      }
      field_ = Field::None;
      return true;
    case Ctx::Skip: return true;
    case Ctx::Shape: return fail_field("holds text where a dimension was expected");
    case Ctx::RanksList: return fail_field("holds text where a rank was expected");
    default: return fail("text where a list or an object was expected");
  }
}

bool DumpBuilder::scalar_null() {
  if (stack_.empty()) return fail("it is a single value, not an object");
  switch (top()) {
    case Ctx::Entry:
      // The pickle's "not yet" (the JSON form writes 0); duration_ms may be absent or null.
      if (field_ == Field::ProfilingName) return fail_field("must be text");
      field_ = Field::None;
      return true;
    case Ctx::Root:
      if (pending_entries_) {  // no entries
        pending_entries_ = false;
        return true;
      }
      if (pending_ != Ctx::Root) pending_ = Ctx::Root;
      field_ = Field::None;
      return true;
    case Ctx::Strings: strings_.emplace_back(); return true;
    case Ctx::Entries: return fail(detail::concat("entry ", entry_index_, " is null, not an object"));
    default: field_ = Field::None; return true;
  }
}

bool DumpBuilder::scalar_bool(bool b) {
  if (stack_.empty()) return fail("it is a single value, not an object");
  if (top() == Ctx::Entry) {
    if (field_ == Field::IsP2p) is_p2p_ = b;
    if (field_ == Field::Retired) retired_ = b;
  }
  if (top() == Ctx::Root && (pending_entries_ || pending_ != Ctx::Root))
    return fail("\"entries\" must be a list, and pg_config an object");
  if (top() == Ctx::Entries) return fail(detail::concat("entry ", entry_index_, " is not an object"));
  if (top() == Ctx::Shape || top() == Ctx::RanksList)
    return fail_field("holds a truth value where a number was expected");
  field_ = Field::None;
  return true;
}

bool DumpBuilder::scalar_int(int64_t v, bool from_double) {
  if (stack_.empty()) return fail("it is a single value, not an object");
  const auto clamp_time = [](int64_t t) { return std::clamp<int64_t>(t, 0, kTimeCap); };
  switch (top()) {
    case Ctx::Root:
      if (pending_entries_) return fail("\"entries\" must be a list");
      if (pending_ != Ctx::Root) return fail("pg_config must be an object keyed by group");
      switch (field_) {
        case Field::Rank:
          if (v < 0 || v > 10'000'000) return fail(detail::concat("its rank ", v, " is out of range"));
          d_.rank = static_cast<int>(v);
          break;
        case Field::DumpTime: d_.dump_time_ns = clamp_time(v); break;
        case Field::Stall: d_.stall_ns = clamp_time(v); break;
        case Field::StallEnd: d_.stall_end_ns = clamp_time(v); break;
        case Field::Version: return fail("\"version\" must be text such as \"2.10\" (major.minor), not a number");
        default: break;
      }
      field_ = Field::None;
      return true;
    case Ctx::Entry:
      if (from_double && field_ != Field::None && field_ != Field::TimeCreated && field_ != Field::TimeStarted &&
          field_ != Field::TimeCompleted)
        return fail_field("must be a whole number");
      switch (field_) {
        case Field::RecordId: row_.record_id = v; break;
        case Field::PgId: row_.pg_id = v; break;
        case Field::CollectiveSeq:
          row_.collective_seq = std::clamp<int64_t>(v, 0, kTimeCap);
          has_seq_ = true;
          break;
        case Field::P2pSeq: row_.p2p_seq = std::clamp<int64_t>(v, 0, kTimeCap); break;
        case Field::TimeCreated: row_.t_created_ns = clamp_time(v); break;
        case Field::TimeStarted: row_.t_started_ns = clamp_time(v); break;
        case Field::TimeCompleted: row_.t_completed_ns = clamp_time(v); break;
        case Field::TimeoutMs: row_.timeout_ms = std::clamp<int64_t>(v, 0, 1'000'000'000); break;
        case Field::Iteration: row_.iteration = std::clamp<int64_t>(v, -1, kTimeCap); break;
        case Field::ProfilingName:
        case Field::State: return fail_field("must be text");
        default: break;
      }
      field_ = Field::None;
      return true;
    case Ctx::Shape:
      if (v < 0) return fail_field(detail::concat("has a negative dimension ", v));
      if (shape_.size() > 64) return fail_field("has a shape of more than 64 dimensions");
      shape_.push_back(v);
      return true;
    case Ctx::Frame:
      if (field_ == Field::FrameLine) frame_.line = v;
      field_ = Field::None;
      return true;
    case Ctx::RanksList:
      if (v < 0 || v > 10'000'000) return fail_field(detail::concat("of group '", group_.name, "' has rank ", v));
      group_.ranks.push_back(static_cast<int>(v));
      return true;
    case Ctx::Strings: strings_.push_back(std::to_string(v)); return true;
    case Ctx::Entries: return fail(detail::concat("entry ", entry_index_, " is a number, not an object"));
    default: field_ = Field::None; return true;
  }
}

bool DumpBuilder::finish_entry() {
  in_entry_ = false;
  if (!has_name_) return fail(detail::concat("entry ", entry_index_, " has no \"", fk::profiling_name, "\""));
  // "nccl:all_reduce" -> "all_reduce"; "nccl:send 0->1" -> "send"
  const std::string& name = row_.profiling_name;
  const size_t colon = name.find(':');
  row_.op = colon == std::string::npos ? name : name.substr(colon + 1);
  if (const size_t space = row_.op.find(' '); space != std::string::npos) row_.op.resize(space);
  parse_p2p_ends(row_);
  const bool p2p = is_p2p_ || row_.op == "send" || row_.op == "recv";
  if (p2p) {
    // Point-to-point entries keep their group's last collective number: matched by p2p
    // number instead.
    row_.last_collective_seq = row_.collective_seq;
    row_.collective_seq = -1;
    if (row_.p2p_seq < 0) row_.p2p_seq = 0;
  } else {
    if (!has_seq_) return fail(detail::concat("entry ", entry_index_, " has no \"", fk::collective_seq_id, "\""));
    row_.p2p_seq = -1;
  }
  if (row_.pg_name.empty()) row_.pg_name = std::to_string(row_.pg_id);
  if (row_.state.empty()) row_.state = "scheduled";
  row_.retired = retired_;
  d_.entries.push_back(std::move(row_));
  row_ = CollectiveRow{};
  ++entry_index_;
  return true;
}

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

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The digits at the end of a file's name, before .json / .pkl / .pickle / .gz: -1 when none.
int rank_from_name(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* suffix : {".gz", ".json", ".pkl", ".pickle"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && lower(name.substr(name.size() - s.size())) == s) name.resize(name.size() - s.size());
  }
  size_t begin = name.size();
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1])))
    --begin;
  if (begin == name.size() || name.size() - begin > 7) return -1;
  return std::stoi(name.substr(begin));
}

// What a file that is neither JSON nor a pickle is, from its first bytes (only to say
// why it is not a dump).
std::string what_else(GzStream& in) {
  char head[16] = {};
  size_t n = 0;
  while (n < sizeof head && !in.at_end())
    head[n++] = in.Take();
  if (n >= 15 && std::string_view(head, 15) == "SQLite format 3")
    return "it is a SQLite database (a ddpscope run file? open it, or give it to `hang` alone)";
  return "it is neither JSON nor a pickle";
}

enum class Form { Json, Pickle, Other };

Form form_of(const GzStream& in) {
  const auto c = static_cast<unsigned char>(in.Peek());
  if (c == 0x80) return Form::Pickle;
  if (c == '{' || c == '[' || c == ' ' || c == '\n' || c == '\r' || c == '\t') return Form::Json;
  return Form::Other;
}

void check_version(FlightDump& d, const std::string& path) {
  if (d.version.empty()) {
    if (d.producer == fk::kProducerName) return;
    bad_dump(path, "it has no \"version\" (PyTorch writes one in every dump, such as \"2.10\")");
  }
  const std::string& v = d.version;
  const size_t dot = v.find('.');
  int major = -1, minor = -1;
  const auto number = [](std::string_view t, int& out) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return !t.empty() && ec == std::errc() && end == t.data() + t.size() && out >= 0;
  };
  if (dot == std::string::npos || !number(std::string_view(v).substr(0, dot), major) ||
      !number(std::string_view(v).substr(dot + 1), minor))
    bad_dump(path, detail::concat("its version \"", v.substr(0, 40),
                                  "\" is not major.minor (PyTorch writes versions such as \"2.10\")"));
  if (major < 1 || major > 2)
    bad_dump(path, detail::concat("its version ", v,
                                  " is not one ddpscope knows: versions 1.x and 2.x are read "
                                  "(PyTorch's dumps up to 2.10); a newer PyTorch may have changed the format"));
  d.version_major = major;
  d.version_minor = minor;
}

// gloo's recorder never moves an entry past "scheduled": then `retired` says it finished.
void settle_states(FlightDump& d) {
  d.states_tracked = std::any_of(d.entries.begin(), d.entries.end(), [](const CollectiveRow& r) {
    return r.state != "scheduled" || r.t_started_ns > 0 || r.t_completed_ns > 0;
  });
  if (d.states_tracked || d.entries.empty()) return;
  for (CollectiveRow& r : d.entries)
    if (r.retired) r.state = "completed";
}

FlightDump read_dump(const std::string& path, int fallback_rank, bool probe, std::string* why_not) {
  FlightDump d;
  d.path = path;
  d.rank = -1;
  std::unique_ptr<GzStream> in;
  try {
    in = std::make_unique<GzStream>(path, "flight-recorder dump");
  } catch (const TraceFileError& e) {
    if (why_not) {
      *why_not = e.what();
      return d;
    }
    throw RunStoreError(e.what(), __FILE__, __LINE__);
  }
  const auto refuse = [&](const std::string& why) -> FlightDump {
    if (why_not) {
      *why_not = why;
      return d;
    }
    bad_dump(path, why);
  };
  if (in->at_end()) return refuse("the file is empty");
  DumpBuilder builder(d, probe, (int64_t{64} << 20) + kExpansion * std::max<int64_t>(in->file_size(), 0));
  const Form form = form_of(*in);
  if (form == Form::Other) return refuse(what_else(*in));
  if (form == Form::Json) {
    rapidjson::Reader reader;
    JsonAdapter adapter{builder};
    const rapidjson::ParseResult ok =
        reader.Parse<rapidjson::kParseStopWhenDoneFlag | rapidjson::kParseNanAndInfFlag>(*in, adapter);
    if (probe && builder.saw_dump_key()) return d;
    if (!ok) {
      if (!builder.error().empty()) return refuse(builder.error());
      const auto code = ok.Code();
      if (!builder.started())
        return refuse(
            detail::concat("it is not JSON (", rapidjson::GetParseError_En(code), " at byte ", ok.Offset(), ")"));
      if (in->at_end())
        return refuse(detail::concat("it is truncated: the JSON ends at byte ", ok.Offset(), " (", builder.entries(),
                                     " entries read); copy the whole file again"));
      return refuse(detail::concat("it is damaged at byte ", ok.Offset(), ": ", rapidjson::GetParseError_En(code), " (",
                                   builder.entries(), " entries read before it)"));
    }
  } else {
    d.form = "pickle";
    try {
      PickleReader reader(*in);
      if (probe) {
        reader.stop_at_first_root_key();
        reader.read();
        if (dump_key(reader.first_root_key())) return d;
        return refuse(reader.first_root_key().empty()
                          ? "it is a pickle, but not of a dictionary"
                          : detail::concat("it is a pickle of a dictionary whose first key is \"",
                                           reader.first_root_key().substr(0, 40), "\", not a dump's"));
      }
      builder.enter_entries();
      bool entry_failed = false;
      reader.stream_root_list(fk::entries, [&](const PickleValue& item) {
        entry_failed = !replay(item, builder);
        return !entry_failed;
      });
      const PickleValue root = reader.read();
      if (entry_failed) return refuse(builder.error());
      builder.leave_entries();
      if (root.type != PickleValue::Type::Dict)
        return refuse("it is a pickle, but not of a dictionary (a dump is one: version, pg_config, entries)");
      if (!replay(root, builder)) return refuse(builder.error());
    } catch (const PickleError& e) {
      return refuse(e.what());
    }
  }
  if (!builder.saw_dump_key())
    return refuse("it has none of a dump's keys (\"version\", \"pg_config\", \"pg_status\", \"entries\")");
  if (probe) return d;
  check_version(d, path);
  settle_states(d);
  if (d.rank < 0) d.rank = rank_from_name(path);
  if (d.rank < 0) d.rank = fallback_rank;
  if (d.rank < 0)
    bad_dump(path, "its rank is not in it and its name does not end with one (name it like nccl_trace_rank_0)");
  for (CollectiveRow& r : d.entries)
    r.rank = d.rank;
  for (GroupRow& g : d.groups)
    g.rank = d.rank;
  return d;
}

}  // namespace

FlightDump read_flight_dump(const std::string& path, int fallback_rank) {
  return read_dump(path, fallback_rank, false, nullptr);
}

std::string why_not_flight_dump(const std::string& path) {
  std::string why;
  try {
    read_dump(path, 0, true, &why);
  } catch (const Error& e) {
    why = e.what();
  }
  return why;
}

bool looks_like_flight_dump(const std::string& path) { return why_not_flight_dump(path).empty(); }

std::vector<std::string> flight_dump_inputs(const std::vector<std::string>& inputs, std::vector<std::string>* skipped) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) throw RunStoreError(detail::concat("'", in, "' does not exist"), __FILE__, __LINE__);
    if (!fs::is_directory(st)) {
      out.push_back(in);
      continue;
    }
    std::vector<std::string> files, reasons;
    for (const auto& e : fs::directory_iterator(in, ec)) {
      if (!e.is_regular_file(ec)) continue;
      const std::string p = e.path().string();
      const std::string why = why_not_flight_dump(p);
      if (why.empty()) {
        files.push_back(p);
      } else {
        std::string shown = why;
        if (const size_t cut = shown.find("': "); cut != std::string::npos && shown.rfind("'", 0) == 0)
          shown = shown.substr(cut + 3);
        reasons.push_back(detail::concat(e.path().filename().string(), ": ", shown));
      }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      std::string held = reasons.empty() ? std::string("no files") : reasons.front();
      if (reasons.size() > 1) held += detail::concat(" (and ", reasons.size() - 1, " more files that are not dumps)");
      throw RunStoreError(detail::concat("the folder '", in, "' holds no flight-recorder dump: ", held), __FILE__,
                          __LINE__);
    }
    out.insert(out.end(), files.begin(), files.end());
    if (skipped) skipped->insert(skipped->end(), reasons.begin(), reasons.end());
  }
  return out;
}

std::vector<std::string> dumps_in_folder(const std::string& folder, std::vector<std::string>* skipped) {
  std::vector<std::string> why_not, found;
  try {
    found = flight_dump_inputs({folder}, &why_not);
  } catch (const Error&) {
    return {};
  }
  for (const std::string& why : why_not)
    if (why.find("profiler trace") != std::string::npos) return {};
  if (skipped) skipped->insert(skipped->end(), why_not.begin(), why_not.end());
  return found;
}

}  // namespace ddpscope::probes
