#include "torch_trace_reader.h"

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <new>
#include <memory>
#include <string_view>

#include "event.h"
#include "gz_stream.h"

namespace ddpscope::probes {
namespace {

#define TRACE_ERROR(...) TraceFileError(detail::concat(__VA_ARGS__), __FILE__, __LINE__)

constexpr size_t kMaxName = 1 << 20;             // an event's name or category
constexpr size_t kMaxString = 16 << 20;          // RapidJSON's stack: any one string
constexpr size_t kMaxLabel = 1024;               // a thread's, group's or host's name
constexpr size_t kMaxGroupRanks = 1 << 20;       // ranks one process group lists
constexpr size_t kMaxGroups = 65536;             // process groups one file lists
constexpr int kMaxDepth = 200;                   // RapidJSON recurses per level: deeper ran out of stack
constexpr double kMaxTimeUs = 4.0e15;            // 2096 in microseconds since 1970: ns fit int64
constexpr double kMaxDurationUs = 1.0e12;        // 11.6 days
constexpr int64_t kMaxNumel = int64_t{1} << 50;  // a tensor's elements, at most
constexpr size_t kMaxArgs = 64 << 10;            // an event's args kept for the Details panel

// Where the parse is, for errors raised inside RapidJSON's allocation.
struct ParsePlace {
  const std::string* path = nullptr;
  const GzStream* stream = nullptr;
};
thread_local ParsePlace t_place;

// RapidJSON's stack allocator, bounded: the reader buffers a whole string before handing
// it over, so a 2 GB name in a 9 MB gzip took 10.6 GB before any handler could refuse it.
struct BoundedAllocator {
  static const bool kNeedFree = true;
  void* Malloc(size_t size) { return Realloc(nullptr, 0, size); }
  void* Realloc(void* p, size_t, size_t size) {
    if (size > kMaxString)
      throw TRACE_ERROR("'", t_place.path ? *t_place.path : std::string("?"), "' holds a string over ",
                        kMaxString >> 20, " MiB near byte ", t_place.stream ? t_place.stream->Tell() : 0,
                        ": not a trace PyTorch writes; refused");
    if (size == 0) {
      std::free(p);
      return nullptr;
    }
    void* q = std::realloc(p, size);
    if (!q) throw std::bad_alloc();
    return q;
  }
  static void Free(void* p) { std::free(p); }
};

// The SAX handler: a small state machine over the document's nesting. Only the fields
// ddpscope reads are kept; everything else is skipped by depth.
class Handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
 public:
  Handler(TraceHeader& header, const std::function<void(const TraceEvent&)>& on_event)
      : h_(header), on_event_(on_event) {}

  bool StartObject() {
    if (++depth_ > kMaxDepth) refuse("JSON nested deeper than ", kMaxDepth, " levels");
    capture([&] { args_writer_.StartObject(); });
    if (depth_ == 1 && !started_) {
      started_ = true;
      top_object_ = true;
    } else if (in_events_array() && depth_ == events_depth_ + 1) {
      ev_ = TraceEvent{};
      in_event_ = true;
    } else if (in_event_ && depth_ == events_depth_ + 2 && key_ == "args") {
      in_args_ = true;
      args_buffer_.Clear();
      args_dropped_ = false;
      args_writer_.Reset(args_buffer_);
      args_writer_.StartObject();
    } else if (top_object_ && depth_ == 2 && key_ == "distributedInfo") {
      in_dist_ = true;
      h_.has_dist_info = true;
    } else if (in_dist_ && depth_ == 4 && pg_array_) {
      if (h_.groups.size() >= kMaxGroups) refuse("more than ", kMaxGroups, " process groups");
      h_.groups.emplace_back();
      in_pg_ = true;
    } else if (top_object_ && depth_ == 3 && devices_array_) {
      ++h_.devices;
    }
    key_.clear();
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    if (in_event_ && depth_ == events_depth_ + 1) {
      ++h_.events;
      if (times_make_sense()) on_event_(ev_);
      in_event_ = false;
    } else if (in_args_ && depth_ == events_depth_ + 2) {
      // Every argument as written, for the Details panel; over kMaxArgs, none of them.
      capture([&] { args_writer_.EndObject(); });
      if (!args_dropped_) ev_.args_json.assign(args_buffer_.GetString(), args_buffer_.GetSize());
      in_args_ = false;
    } else if (in_args_) {
      capture([&] { args_writer_.EndObject(); });
    } else if (in_dist_ && depth_ == 2) {
      in_dist_ = false;
    } else if (in_pg_ && depth_ == 4) {
      in_pg_ = false;
    }
    --depth_;
    return true;
  }
  bool StartArray() {
    if (++depth_ > kMaxDepth) refuse("JSON nested deeper than ", kMaxDepth, " levels");
    capture([&] { args_writer_.StartArray(); });
    if (depth_ == 1 && !started_) {
      started_ = true;
      h_.list_form = true;
      events_depth_ = 1;
    } else if (top_object_ && depth_ == 2 && key_ == "traceEvents") {
      events_depth_ = 2;
    } else if (top_object_ && depth_ == 2 && key_ == "deviceProperties") {
      devices_array_ = true;
    } else if (in_dist_ && depth_ == 3 && key_ == "pg_config") {
      pg_array_ = true;
    } else if (in_args_) {
      // "Input Dims": [[d0, d1], ...] (record_param_comms nests once more); the first
      // innermost list of numbers is the first input's shape.
      if (key_ == "Input Dims" && dims_depth_ < 0) {
        dims_depth_ = depth_;
        dims_numel_ = 1;
        dims_seen_ = false;
      } else if (key_ == "Input type" && type_depth_ < 0) {
        type_depth_ = depth_;
      }
    } else if (in_pg_ && key_ == "ranks") {
      pg_ranks_ = true;
    }
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    capture([&] { args_writer_.EndArray(); });
    if (depth_ == events_depth_ && in_events_array()) events_done_ = true;
    if (depth_ == 2) devices_array_ = false;
    if (in_dist_ && depth_ == 3) pg_array_ = false;
    if (dims_depth_ >= 0) {
      if (ev_.first_input_numel < 0) {
        if (dims_seen_)
          ev_.first_input_numel = dims_numel_;
        else if (depth_ == dims_depth_ + 1)
          ev_.first_input_numel = 1;  // the first input is 0-d
      }
      if (depth_ == dims_depth_) dims_depth_ = -1;
      dims_seen_ = false;
      dims_numel_ = 1;
    }
    if (type_depth_ == depth_) type_depth_ = -1;
    pg_ranks_ = false;
    --depth_;
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    capture([&] { args_writer_.Key(s, n); });
    key_.assign(s, n);
    return true;
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    capture([&] { args_writer_.String(s, n); });
    if (n > kMaxName && (key_ == "name" || key_ == "cat"))
      refuse("an event's ", key_, " of ", n, " bytes (over 1 MiB)");
    if (in_event_ && !in_args_ && depth_ == events_depth_ + 1) {
      if (key_ == "name")
        ev_.name.assign(s, n);
      else if (key_ == "cat")
        ev_.cat.assign(s, n);
      else if (key_ == "ph")
        ev_.ph = n > 0 ? s[0] : 0;
      else if (key_ == "pid")
        label(ev_.pid_text, s, n, "process id");
      else if (key_ == "tid")
        label(ev_.tid_text, s, n, "thread id");
      else if (key_ == "id")
        ev_.correlation = parse_int(s, n);
    } else if (in_args_) {
      if (type_depth_ >= 0) {
        if (ev_.first_input_type.empty()) ev_.first_input_type.assign(s, n);
      } else if (depth_ == events_depth_ + 2) {
        if (key_ == "Collective name")
          label(ev_.collective, s, n, "collective name");
        else if (key_ == "dtype")
          label(ev_.dtype, s, n, "dtype");
        else if (key_ == "Process Group Name")
          label(ev_.pg_name, s, n, "process group name");
        else if (key_ == "Process Group Ranks")
          ev_.pg_ranks.assign(s, n);
        else if (key_ == "name")
          label(ev_.meta_name, s, n, "thread or process name");
        else if (is_ddpscope_key())
          ddpscope_string(s, n);
      }
    } else if (in_dist_ && depth_ == 2 && key_ == "backend") {
      label(h_.backend, s, n, "backend");
    } else if (in_pg_ && depth_ == 4) {
      if (key_ == "pg_name")
        label(h_.groups.back().name, s, n, "process group name");
      else if (key_ == "pg_desc")
        label(h_.groups.back().desc, s, n, "process group description");
    } else if (top_object_ && depth_ == 1) {
      if (key_ == "ddpscopeHost")
        label(h_.ddpscope_host, s, n, "host name");
      else if (key_ == "ddpscopeDevice")
        label(h_.ddpscope_device, s, n, "device name");
    }
    return true;
  }
  bool Int(int v) { return Int64(v); }
  bool Uint(unsigned v) { return Int64(v); }
  bool Uint64(uint64_t v) {
    if (in_args_ && v > uint64_t(INT64_MAX)) {
      capture([&] { args_writer_.Uint64(v); });
      return number(INT64_MAX);
    }
    return Int64(static_cast<int64_t>(v));
  }
  bool Int64(int64_t v) {
    capture([&] { args_writer_.Int64(v); });
    return number(v);
  }
  bool number(int64_t v) {
    if (in_event_ && !in_args_ && depth_ == events_depth_ + 1) {
      if (key_ == "ts")
        ev_.ts_us = static_cast<double>(v);
      else if (key_ == "dur")
        ev_.dur_us = static_cast<double>(v);
      else if (key_ == "pid")
        ev_.pid = v;
      else if (key_ == "tid")
        ev_.tid = v;
      else if (key_ == "id")
        ev_.correlation = v;
    } else if (in_args_) {
      if (dims_depth_ >= 0) {
        // Saturating: a hostile shape must not overflow (it only sizes a byte count).
        const int64_t d = std::max<int64_t>(v, 0);
        dims_numel_ = d != 0 && dims_numel_ > kMaxNumel / d ? kMaxNumel : dims_numel_ * d;
        dims_seen_ = true;
      } else if (depth_ == events_depth_ + 2) {
        if (key_ == "External id")
          ev_.external_id = v;
        else if (key_ == "correlation")
          ev_.correlation = v;
        else if (key_ == "device")
          ev_.device = v;
        else if (key_ == "stream")
          ev_.stream = v;
        else if (key_ == "bytes")
          ev_.bytes = v;
        else if (key_ == "In msg nelems")
          ev_.in_nelems = v;
        else if (key_ == "Out msg nelems")
          ev_.out_nelems = v;
        else if (key_ == "Group size")
          ev_.group_size = v;
        else if (key_ == "value")
          ev_.value = static_cast<double>(v);
        else if (is_ddpscope_key())
          ddpscope_int(v);
      }
    } else if (in_dist_ && depth_ == 2) {
      if (key_ == "rank")
        h_.rank = as_rank(v, "distributedInfo's rank");
      else if (key_ == "world_size")
        h_.world_size = as_rank(v, "distributedInfo's world_size");
    } else if (pg_ranks_) {
      if (h_.groups.back().ranks.size() >= kMaxGroupRanks)
        refuse("a process group listing more than ", kMaxGroupRanks, " ranks");
      // And all groups together: 267 groups of a million ranks each took 2.3 GB.
      if (++group_ranks_ > kMaxGroupRanks * 4)
        refuse("process groups listing more than ", kMaxGroupRanks * 4, " ranks in all");
      h_.groups.back().ranks.push_back(as_rank(v, "a process group's rank"));
    } else if (top_object_ && depth_ == 1) {
      if (key_ == "baseTimeNanoseconds")
        h_.base_time_ns = as_base_time(v);
      else if (key_ == "schemaVersion")
        h_.schema_version = static_cast<int>(v);
      else if (key_ == "ddpscopeExport")
        h_.ddpscope_export = v > 0;
      else if (key_ == "ddpscopeClockUncertaintyNs")
        h_.ddpscope_clock_uncertainty_ns = v;
      else if (key_ == "ddpscopeLeaveOutLastStep")
        h_.ddpscope_leave_out_last_step = v;
      else if (key_ == "ddpscopeUsOriginNs")
        h_.ddpscope_us_origin_ns = v;
      else if (key_ == "ddpscopeLastStepBeginNs")
        h_.ddpscope_last_step_begin_ns = v;
    }
    return true;
  }
  bool Double(double v) {
    capture([&] { args_writer_.Double(v); });
    if (in_event_ && !in_args_ && depth_ == events_depth_ + 1) {
      if (key_ == "ts")
        ev_.ts_us = v;
      else if (key_ == "dur")
        ev_.dur_us = v;
      return true;
    }
    if (top_object_ && depth_ == 1 && key_ == "baseTimeNanoseconds") {
      if (!fits_int64(v)) refuse("a baseTimeNanoseconds of ", v);
      h_.base_time_ns = as_base_time(static_cast<int64_t>(v));
      return true;
    }
    // A dimension written as a double: a whole number it can hold, else none (0).
    if (in_args_ && dims_depth_ >= 0) return number(fits_int64(v) ? static_cast<int64_t>(v) : 0);
    if (in_args_ && depth_ == events_depth_ + 2 && key_ == "value") ev_.value = v;
    return true;
  }
  bool Null() {
    capture([&] { args_writer_.Null(); });
    if (in_args_ && depth_ == events_depth_ + 2 && key_ == "value") ev_.value = NAN;
    return true;
  }
  bool Bool(bool v) {
    capture([&] { args_writer_.Bool(v); });
    return true;
  }

  bool saw_events() const { return events_depth_ > 0; }

  // Names of threads, groups and hosts are kept once per thread, op or file, and shown as
  // labels: real ones are under 100 bytes; one over kMaxLabel is refused.
  static void label(std::string& out, const char* s, size_t n, const char* what) {
    if (n > kMaxLabel) refuse("a ", what, " of ", n, " bytes (over 1 KiB)");
    out.assign(s, n);
  }

  template <typename... Args>
  [[noreturn]] static void refuse(const Args&... what) {
    throw TRACE_ERROR("'", t_place.path ? *t_place.path : std::string("?"), "' holds ", what..., " near byte ",
                      t_place.stream ? t_place.stream->Tell() : 0, ": not a trace PyTorch writes; refused");
  }
  // NaN, infinities and magnitudes past 2^63 have no int64 (casting them is undefined).
  static bool fits_int64(double v) { return std::isfinite(v) && std::fabs(v) < 9.2e18; }
  // Nanoseconds within 130 years of 1970 either way: with a trace's times added, int64 holds them.
  static int64_t as_base_time(int64_t v) {
    // Negative too: ddpscope's export of a list-form trace (times from the profiler's start).
    if (v < -4'100'000'000'000'000'000LL || v > 4'100'000'000'000'000'000LL)
      refuse("a baseTimeNanoseconds of ", v, ", past 2100 either side of 1970");
    return v;
  }
  static int as_rank(int64_t v, const char* what) {
    if (v < 0 || v > INT32_MAX) refuse(what, " ", v, ", outside 0..2147483647");
    return static_cast<int>(v);
  }
  // A complete event's times: finite, within what nanoseconds since 1970 hold, and not
  // ending before they begin. Other events are counted and left out.
  bool times_make_sense() {
    if (ev_.ph == 'M') return true;  // metadata: no time of its own
    if (!std::isfinite(ev_.ts_us) || !std::isfinite(ev_.dur_us) || std::fabs(ev_.ts_us) > kMaxTimeUs ||
        ev_.dur_us > kMaxDurationUs) {
      ++h_.skipped_bad_time;
      return false;
    }
    if (ev_.dur_us < 0) {
      ++h_.skipped_negative_duration;
      return false;
    }
    return true;
  }
  bool started() const { return started_; }

 private:
  static int64_t parse_int(const char* s, size_t n) {
    int64_t v = 0;
    if (n > 18) return -1;  // past int64: not an id
    for (size_t i = 0; i < n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
      v = v * 10 + (s[i] - '0');
    }
    return n ? v : -1;
  }
  bool in_events_array() const { return events_depth_ > 0 && !events_done_; }
  bool is_ddpscope_key() const { return key_.size() > 9 && key_.compare(0, 9, "ddpscope.") == 0; }
  void ddpscope_string(const char* s, size_t n) {
    const std::string_view k = std::string_view(key_).substr(9);
    if (k == "kind") {
      ev_.ds_kind = kind_from_name(std::string_view(s, n));
      ev_.ds_metric = std::string_view(s, n) == "metric";
    } else if (k == "name")
      ev_.ds_name.assign(s, n);
  }
  void ddpscope_int(int64_t v) {
    const std::string_view k = std::string_view(key_).substr(9);
    if (k == "iteration")
      ev_.ds_iteration = v;
    else if (k == "bucket")
      ev_.ds_bucket = v;
    else if (k == "param")
      ev_.ds_param = v;
    else if (k == "bytes")
      ev_.ds_bytes = v;
    else if (k == "peer")
      ev_.ds_peer = v;
    else if (k == "seq")
      ev_.ds_seq = v;
    else if (k == "ctx_id")
      ev_.ds_ctx = v;
    else if (k == "msg_id")
      ev_.ds_msg = v;
    else if (k == "thread")
      ev_.ds_thread = v;
  }
  // A kind's index from its name (probes/runtime/event.h); -1 for a name this build lacks.
  static int kind_from_name(std::string_view name) {
    for (int k = 0; k < kNumKinds; ++k)
      if (name == kind_name(static_cast<Kind>(k))) return k;
    return -1;
  }

  TraceHeader& h_;
  const std::function<void(const TraceEvent&)>& on_event_;
  TraceEvent ev_;
  std::string key_;
  int depth_ = 0, events_depth_ = -1, dims_depth_ = -1, type_depth_ = -1;
  int64_t dims_numel_ = 1;
  bool dims_seen_ = false;
  bool started_ = false, top_object_ = false, events_done_ = false;
  // Writes an args token into the event's copy, which stops (and frees what it held) at
  // kMaxArgs: a hostile args object of 500 MB must not be held whole.
  template <typename Write>
  void capture(Write&& write) {
    if (!in_args_ || args_dropped_) return;
    write();
    if (args_buffer_.GetSize() > kMaxArgs) {
      args_dropped_ = true;
      args_buffer_.Clear();
      args_buffer_.ShrinkToFit();
    }
  }
  rapidjson::StringBuffer args_buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> args_writer_;
  bool args_dropped_ = false;
  bool in_event_ = false, in_args_ = false, in_dist_ = false, in_pg_ = false;
  bool pg_array_ = false, pg_ranks_ = false, devices_array_ = false;
  size_t group_ranks_ = 0;  // ranks listed by every group so far
};

}  // namespace

TraceHeader read_torch_trace(const std::string& path, const std::function<void(const TraceEvent&)>& on_event,
                             const std::function<bool(double)>& progress) {
  TraceHeader header;
  GzStream stream(path, "trace file", progress);
  Handler handler(header, on_event);
  t_place = {&path, &stream};
  struct Forget {
    ~Forget() { t_place = {}; }
  } forget;
  BoundedAllocator allocator;
  rapidjson::GenericReader<rapidjson::UTF8<>, rapidjson::UTF8<>, BoundedAllocator> reader(&allocator);
  const rapidjson::ParseResult ok =
      reader.Parse<rapidjson::kParseStopWhenDoneFlag | rapidjson::kParseNanAndInfFlag>(stream, handler);
  if (!ok) {
    const auto code = ok.Code();
    if (code == rapidjson::kParseErrorDocumentEmpty)
      throw TRACE_ERROR("'", path, "' is empty, not a PyTorch profiler trace");
    const bool ended = stream.Peek() == '\0';
    if (!handler.started())
      throw TRACE_ERROR("'", path, "' is not JSON, so not a PyTorch profiler trace (",
                        rapidjson::GetParseError_En(code), " at byte ", ok.Offset(), ")");
    if (ended)
      throw TRACE_ERROR("'", path, "' is truncated: the JSON ends at byte ", ok.Offset(),
                        " in the middle of the trace (", header.events,
                        " events read); copy the whole file again or re-export it");
    throw TRACE_ERROR("'", path, "' is damaged at byte ", ok.Offset(), ": ", rapidjson::GetParseError_En(code), " (",
                      header.events, " events read before it)");
  }
  if (!handler.saw_events())
    throw TRACE_ERROR("'", path,
                      "' is JSON but not a PyTorch profiler trace: it has no traceEvents list "
                      "and is not a list of events");
  return header;
}

int dtype_bytes(const std::string& type) {
  std::string t;
  for (char c : type)
    t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t.rfind("c10::", 0) == 0) t = t.substr(5);
  // PyTorch's names, and ddpscope's own (f32, f64, f16, bf16, i64: its flight records).
  if (t == "float" || t == "float32" || t == "f32" || t == "int" || t == "int32" || t == "unsigned int") return 4;
  if (t == "double" || t == "float64" || t == "f64" || t == "long" || t == "long int" || t == "int64" || t == "i64" ||
      t == "long long" || t == "unsigned long")
    return 8;
  if (t == "half" || t == "float16" || t == "f16" || t == "bfloat16" || t == "bf16" || t == "short" || t == "int16")
    return 2;
  if (t == "bool" || t == "char" || t == "signed char" || t == "unsigned char" || t == "byte" || t == "int8" ||
      t == "uint8")
    return 1;
  return 0;
}

}  // namespace ddpscope::probes
