#include "chrome_trace_export.h"

#include "atomic_file.h"
#include "trace_event_writer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace ddpscope::probes {

namespace {

// One span as a complete (or instant) event; keys in sorted order, as the nlohmann objects
// this writer replaced wrote them.
void write_span(TraceEventWriter& events, const SpanRow& s, double begin_us) {
  TraceEventWriter::Json& e = events.begin_event();
  e.StartObject();
  e.Key("args");
  e.StartObject();
  const auto arg = [&e](const char* key, int64_t value) { TraceEventWriter::field_if_set(e, key, value); };
  arg("bucket", s.bucket);
  arg("bytes", s.bytes);
  arg("ctx_id", s.ctx_id);
  arg("iteration", s.iteration);
  arg("msg_id", s.msg_id);
  arg("param", s.param);
  arg("peer", s.peer);
  arg("seq", s.seq);
  if (!s.file.empty()) {
    e.Key("src");
    TraceEventWriter::string(e, s.file + ":" + std::to_string(s.line), "source file");
  }
  e.EndObject();
  TraceEventWriter::span_fields(e, kind_name(s.kind), s.name, s.rank, s.thread, begin_us, s.t_end_ns - s.t_begin_ns);
  events.end_event();
}

}  // namespace

int64_t export_chrome_trace(RunStoreReader& run, const std::string& out_path) {
  // Written next to the target and renamed at the end: a failed export leaves no
  // half-written trace behind.
  AtomicFile file(out_path);
  std::ofstream out(file.partial(), std::ios::binary | std::ios::trunc);
  DDPSCOPE_CHECK(out.good(), "cannot write the trace to '", out_path,
                 "'; check that its folder exists and is writable");
  const auto [t0, t1] = run.time_range();
  (void)t1;
  TraceEventWriter events(out);
  auto emit = [&](const nlohmann::json& e) { events.raw_event(e.dump()); };
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":";
  const RunRow r = run.run();
  out << nlohmann::json{{"status", r.status},
                        {"model", r.model},
                        {"backend", r.backend},
                        {"world_size", r.world_size},
                        {"created_at", r.created_at}}
             .dump();
  out << ",\"traceEvents\":[";
  for (const RankRow& rank : run.ranks()) {
    emit({{"ph", "M"},
          {"name", "process_name"},
          {"pid", rank.rank},
          {"tid", 0},
          {"args",
           {{"name", "rank " + std::to_string(rank.rank) + (rank.host.empty() ? "" : " (" + rank.host + ")")}}}});
    emit({{"ph", "M"},
          {"name", "process_sort_index"},
          {"pid", rank.rank},
          {"tid", 0},
          {"args", {{"sort_index", rank.rank}}}});
  }
  for (const ThreadRow& t : run.threads()) {
    emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", t.rank}, {"tid", t.thread}, {"args", {{"name", t.name}}}});
  }
  // Microseconds with nanosecond decimals, relative to the run's first event.
  auto us = [base = t0](int64_t ns) { return static_cast<double>(ns - base) / 1000.0; };
  run.each_span_row({}, [&](const SpanRow& s) { write_span(events, s, us(s.t_begin_ns)); });
  events.flush();
  out << "\n]}\n";
  out.close();
  DDPSCOPE_CHECK(out.good(), "writing the trace to '", out_path, "' failed (disk full?)");
  file.commit();
  return events.events();
}

}  // namespace ddpscope::probes
