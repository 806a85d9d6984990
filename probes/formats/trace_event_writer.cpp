#include "trace_event_writer.h"

#include <cstdio>

#include "ddpscope/error.h"

namespace ddpscope::probes {
namespace {
constexpr size_t kFlushBytes = 1 << 20;

// The text in ASCII, other bytes as \xNN: an error line must not carry the broken text.
std::string printable(std::string_view text) {
  std::string out;
  for (const unsigned char c : text.substr(0, 80)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  return out;
}
}  // namespace

void TraceEventWriter::separate() {
  if (!first_) buffer_.Put(',');
  buffer_.Put('\n');
  first_ = false;
}

TraceEventWriter::Json& TraceEventWriter::begin_event() {
  separate();
  json_.Reset(buffer_);
  return json_;
}

void TraceEventWriter::end_event() {
  ++events_;
  if (buffer_.GetSize() >= kFlushBytes) flush();
}

void TraceEventWriter::raw_event(std::string_view json) {
  separate();
  for (char c : json)
    buffer_.Put(c);
  end_event();
}

void TraceEventWriter::flush() {
  out_.write(buffer_.GetString(), static_cast<std::streamsize>(buffer_.GetSize()));
  buffer_.Clear();
}

void TraceEventWriter::string(Json& json, std::string_view text, const char* what) {
  DDPSCOPE_CHECK(json.String(text.data(), static_cast<rapidjson::SizeType>(text.size())), "the run's ", what, " '",
                 printable(text),
                 "' is not UTF-8 text, which a JSON trace must hold: the run file is damaged (ddpscope ",
                 "writes names as UTF-8); nothing was exported");
}

void TraceEventWriter::span_fields(Json& json, const char* category, std::string_view name, int64_t pid, int64_t tid,
                                   double begin_us, int64_t duration_ns) {
  const bool complete = duration_ns > 0;
  json.Key("cat");
  json.String(category);
  if (complete) {
    json.Key("dur");
    json.Double(static_cast<double>(duration_ns) / 1000.0);
  }
  json.Key("name");
  string(json, name, "span name");
  json.Key("ph");
  json.String(complete ? "X" : "i");
  json.Key("pid");
  json.Int64(pid);
  if (!complete) {
    json.Key("s");
    json.String("t");
  }
  json.Key("tid");
  json.Int64(tid);
  json.Key("ts");
  json.Double(begin_us);  // times from int64 nanoseconds: always finite
  json.EndObject();
}

}  // namespace ddpscope::probes
