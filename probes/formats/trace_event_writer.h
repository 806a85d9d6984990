// Trace events into a file, one JSON object a line, through RapidJSON's writer.
//
// An export writes every span of a run as an event. Building a nlohmann::json object for
// each (a std::map of strings, then dump()) took 21.5 s for a run of 4.5 million spans
// (perf: allocation and destruction 35 %, escaping 12 %); the writer here streams each
// event into one buffer that goes to the file a megabyte at a time. Callers give an
// event's keys sorted, as nlohmann's objects wrote them, so the files read the same.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ddpscope::probes {

class TraceEventWriter {
 public:
  using Json = rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>, rapidjson::CrtAllocator,
                                 rapidjson::kWriteValidateEncodingFlag>;

  explicit TraceEventWriter(std::ostream& out) : out_(out) {}
  ~TraceEventWriter() = default;
  TraceEventWriter(const TraceEventWriter&) = delete;
  TraceEventWriter& operator=(const TraceEventWriter&) = delete;

  // The writer for the next event: write one object with it, then call end_event().
  Json& begin_event();
  void end_event();
  // An event already in JSON (the few metadata events, built with nlohmann::json).
  void raw_event(std::string_view json);
  // Writes what is buffered; call before closing the stream.
  void flush();
  int64_t events() const { return events_; }

  // A string value; text that is not UTF-8 (a hostile run file's names) is an error
  // naming `what`, as the export's writer said before.
  static void string(Json& json, std::string_view text, const char* what);
  // `key`: `value`, unless it is negative (a field the span does not have).
  static void field_if_set(Json& json, const char* key, int64_t value) {
    if (value < 0) return;
    json.Key(key);
    json.Int64(value);
  }
  // A span's keys after its "args", in sorted order: cat, dur (a complete event: duration_ns
  // above 0; else an instant), name, ph, pid, s (instants), tid, ts; then closes the event.
  static void span_fields(Json& json, const char* category, std::string_view name, int64_t pid, int64_t tid,
                          double begin_us, int64_t duration_ns);

 private:
  void separate();

  std::ostream& out_;
  rapidjson::StringBuffer buffer_;
  Json json_;
  bool first_ = true;
  int64_t events_ = 0;
};

}  // namespace ddpscope::probes
