#include "flight_dump_builder.h"

#include <algorithm>
#include <charconv>

namespace ddpscope::probes::dump_sax {

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

}  // namespace ddpscope::probes::dump_sax
