#include "chrome_trace_export.h"

#include "atomic_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace ddpscope::probes {

int64_t export_chrome_trace(RunStoreReader& run, const std::string& out_path) {
  // Written next to the target and renamed at the end: a failed export leaves no
  // half-written trace behind.
  AtomicFile file(out_path);
  std::ofstream out(file.partial(), std::ios::binary | std::ios::trunc);
  DDPSCOPE_CHECK(out.good(), "cannot write the trace to '", out_path,
                 "'; check that its folder exists and is writable");
  const auto [t0, t1] = run.time_range();
  (void)t1;
  int64_t written = 0;
  bool first = true;
  auto emit = [&](const nlohmann::json& e) {
    out << (first ? "\n" : ",\n") << e.dump();
    first = false;
    ++written;
  };
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
  run.each_span_row({}, [&](const SpanRow& s) {
    nlohmann::json args = nlohmann::json::object();
    if (s.iteration >= 0) args["iteration"] = s.iteration;
    if (s.bucket >= 0) args["bucket"] = s.bucket;
    if (s.param >= 0) args["param"] = s.param;
    if (s.bytes >= 0) args["bytes"] = s.bytes;
    if (s.peer >= 0) args["peer"] = s.peer;
    if (s.seq >= 0) args["seq"] = s.seq;
    if (s.ctx_id >= 0) args["ctx_id"] = s.ctx_id;
    if (s.msg_id >= 0) args["msg_id"] = s.msg_id;
    if (!s.file.empty()) args["src"] = s.file + ":" + std::to_string(s.line);
    nlohmann::json e = {{"name", s.name},  {"cat", kind_name(s.kind)}, {"pid", s.rank},
                        {"tid", s.thread}, {"ts", us(s.t_begin_ns)},   {"args", std::move(args)}};
    if (s.t_end_ns > s.t_begin_ns) {
      e["ph"] = "X";
      e["dur"] = static_cast<double>(s.t_end_ns - s.t_begin_ns) / 1000.0;
    } else {
      e["ph"] = "i";
      e["s"] = "t";
    }
    emit(e);
  });
  out << "\n]}\n";
  out.close();
  DDPSCOPE_CHECK(out.good(), "writing the trace to '", out_path, "' failed (disk full?)");
  file.commit();
  return written;
}

}  // namespace ddpscope::probes
