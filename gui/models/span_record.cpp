#include "span_record.h"

#include <nlohmann/json.hpp>

#include "ddpscope/error.h"
#include "run_store_reader.h"

namespace ddpscope::gui {

namespace {

// Each set column of the span's row, by the run file's names for them.
void addColumns(probes::RunStoreReader& run, const probes::RunStoreReader::StoredSpan& stored, SpanRecord& r) {
  const probes::PackedSpan& s = stored.span;
  const auto add = [&](const char* name, int64_t v, int64_t unset = -1) {
    if (v != unset) r.fields.emplace_back(name, std::to_string(v));
  };
  r.fields.emplace_back("kind", probes::kind_name(static_cast<probes::Kind>(s.kind)));
  if (const std::string name = run.name(s.name_id); !name.empty()) r.fields.emplace_back("name", name);
  r.fields.emplace_back("rank", std::to_string(stored.rank));
  r.fields.emplace_back("thread", std::to_string(stored.thread));
  r.fields.emplace_back("t_begin_ns", std::to_string(s.t_begin_ns));
  r.fields.emplace_back("t_end_ns", std::to_string(s.t_end_ns));
  add("iteration", s.iteration);
  add("bucket", s.bucket);
  add("param", s.param);
  add("bytes", s.bytes);
  add("peer", s.peer);
  add("seq", s.seq);
  add("ctx_id", s.ctx_id);
  add("msg_id", s.msg_id);
  add("rref_id", s.rref_id);
  add("fork_id", s.fork_id);
  add("flags", s.flags, 0);
}

// A value as a user reads it: strings bare, everything else as compact JSON.
std::string valueText(const nlohmann::ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

SpanRecord readSpanRecord(const std::string& path, int64_t span_id) {
  SpanRecord r;
  try {
    probes::RunStoreReader run(path);
    const auto stored = run.span_by_id(span_id);
    if (!stored) {
      r.error = "the run file holds no span " + std::to_string(span_id);
      return r;
    }
    addColumns(run, *stored, r);
    const std::string args = run.span_args(span_id);
    if (!args.empty()) {
      const nlohmann::ordered_json j = nlohmann::ordered_json::parse(args);
      for (const auto& [key, value] : j.items())
        r.arguments.emplace_back(key, valueText(value));
    }
  } catch (const std::exception& e) {
    r.error = user_message(e);
  }
  return r;
}

}  // namespace ddpscope::gui
