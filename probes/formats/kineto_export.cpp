#include "kineto_export.h"

#include "atomic_file.h"
#include "trace_event_writer.h"

#include "gpu_time.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "sqlite_db.h"

namespace ddpscope::probes {
namespace fs = std::filesystem;
namespace {

const char* kineto_category(Kind kind) {
  switch (kind) {
    case Kind::GpuKernel:
    case Kind::GpuComm: return "kernel";
    case Kind::GpuMemcpy: return "gpu_memcpy";
    case Kind::GpuMemset: return "gpu_memset";
    case Kind::CudaRuntime: return "cuda_runtime";
    case Kind::Iteration: return "user_annotation";
    default: return "cpu_op";
  }
}

bool is_gpu_kind(Kind kind) {
  return kind == Kind::GpuKernel || kind == Kind::GpuComm || kind == Kind::GpuMemcpy || kind == Kind::GpuMemset;
}

// Where a thread's events go: Kineto puts GPU rows in a process per device and a thread
// per stream ("GPU d stream s" in a run), CPU threads in the rank's process.
struct Track {
  int64_t pid = 0, tid = 0;
  int64_t device = -1, stream = -1;
};

std::map<int, Track> tracks_of(const std::vector<ThreadRow>& threads, int rank, int64_t rank_pid) {
  static const std::regex gpu("GPU ([0-9]+) stream ([0-9]+)");
  std::map<int, Track> tracks;
  for (const ThreadRow& t : threads) {
    if (t.rank != rank) continue;
    std::smatch m;
    Track k;
    if (std::regex_match(t.name, m, gpu)) {
      k.device = std::stoll(m[1].str());
      k.stream = std::stoll(m[2].str());
      k.pid = k.device;
      k.tid = k.stream;
    } else {
      k.pid = rank_pid;
      k.tid = t.thread;
    }
    tracks[t.thread] = k;
  }
  return tracks;
}

class RankFile {
 public:
  RankFile(const std::string& path) : file_(path) {
    out_.open(file_.partial(), std::ios::binary | std::ios::trunc);
    DDPSCOPE_CHECK(out_.good(), "cannot write '", file_.partial(), "'; check that the folder is writable");
  }
  void header(const nlohmann::json& h) {
    const std::string text = h.dump();
    out_ << text.substr(0, text.size() - 1) << ",\"traceEvents\":[";
  }
  void event(const nlohmann::json& e) { events_.raw_event(e.dump()); }
  TraceEventWriter& events() { return events_; }
  void finish() {
    events_.flush();
    out_ << "\n]}\n";
    out_.close();
    DDPSCOPE_CHECK(out_.good(), "writing '", file_.path(), "' failed (disk full?)");
    file_.commit();
  }

 private:
  AtomicFile file_;  // declared first: the stream closes before the partial file is removed
  std::ofstream out_;
  TraceEventWriter events_{out_};
};

std::string rank_trace_path(const std::string& dir, int rank) {
  return (fs::path(dir) / ("rank" + std::to_string(rank) + ".pt.trace.json")).string();
}

void prepare_folder(const std::string& dir, const std::vector<RankRow>& ranks, bool force) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(detail::concat("--kineto '", dir, "' is a file; name a folder to write one trace per rank into"),
                __FILE__, __LINE__);
  fs::create_directories(dir, ec);
  DDPSCOPE_CHECK(!ec, "cannot create the folder '", dir, "': ", ec.message());
  if (force) return;
  for (const RankRow& k : ranks) {
    const std::string path = rank_trace_path(dir, k.rank);
    DDPSCOPE_CHECK(!fs::exists(path, ec), "'", path, "' exists; pass --force to replace it or choose another folder");
  }
}

// What every rank's file shares: the run, its clock base and the ranks' file.
struct ExportContext {
  RunStoreReader& run;
  SqliteDb db;
  RunRow row;
  std::vector<ThreadRow> threads;
  int64_t base = 0;
  double us(int64_t ns) const { return static_cast<double>(ns - base) / 1000.0; }
};

nlohmann::json rank_header(ExportContext& c, const RankRow& k) {
  int64_t uncertainty = -1;  // files before schema 5 have no such column
  try {
    uncertainty =
        c.db.query_int64("SELECT coalesce(clock_uncertainty_ns, -1) FROM ranks WHERE rank = " + std::to_string(k.rank));
  } catch (const std::exception&) {
  }
  // The default group's ranks: every one of a job of up to 65,536; past that (a world
  // size an imported trace claimed) the ranks the run holds, so nothing is sized by a claim.
  nlohmann::json all_ranks = nlohmann::json::array();
  if (c.row.world_size <= 65536) {
    for (int r = 0; r < c.row.world_size; ++r)
      all_ranks.push_back(r);
  } else {
    for (const RankRow& held : c.run.ranks())
      all_ranks.push_back(held.rank);
  }
  const nlohmann::json pg = {
      {"pg_name", "0"}, {"pg_desc", "default_pg"}, {"pg_size", c.row.world_size}, {"ranks", all_ranks}};
  // HTA's window (gpu_time.h) as the imported run had it, so importing the export
  // again gives the same GPU figures.
  const GpuWindow window = gpu_window_from_config(c.row.config_json);
  const auto w = window.ranks.find(k.rank);
  const GpuWindow::Rank rank_window = w != window.ranks.end() ? w->second : GpuWindow::Rank{};
  nlohmann::json header = {{"schemaVersion", 1},
                           {"ddpscopeExport", 1},
                           {"ddpscopeClockUncertaintyNs", uncertainty},
                           {"ddpscopeLeaveOutLastStep", window.leave_out_last_step ? 1 : 0},
                           {"ddpscopeUsOriginNs", rank_window.us_origin_ns},
                           {"ddpscopeHost", k.host},
                           {"ddpscopeDevice", k.device},
                           {"deviceProperties", nlohmann::json::array()},
                           {"distributedInfo",
                            {{"backend", c.row.backend},
                             {"rank", k.rank},
                             {"world_size", c.row.world_size},
                             {"pg_count", 1},
                             {"pg_config", {pg}}}},
                           {"displayTimeUnit", "ms"},
                           {"baseTimeNanoseconds", c.base}};
  if (rank_window.last_step_begin_ns != INT64_MIN) header["ddpscopeLastStepBeginNs"] = rank_window.last_step_begin_ns;
  return header;
}

void write_track_names(RankFile& file, const ExportContext& c, const RankRow& k, int64_t rank_pid,
                       const std::map<int, Track>& tracks) {
  file.event({{"ph", "M"},
              {"name", "process_name"},
              {"pid", rank_pid},
              {"tid", 0},
              {"args", {{"name", "rank " + std::to_string(k.rank)}}}});
  for (const auto& [thread, track] : tracks) {
    std::string name;
    for (const ThreadRow& t : c.threads)
      if (t.rank == k.rank && t.thread == thread) name = t.name;
    file.event({{"ph", "M"},
                {"name", "thread_name"},
                {"pid", track.pid},
                {"tid", track.tid},
                {"args", {{"name", name}, {"ddpscope.thread", thread}}}});
  }
}

// ddpscope's fields, so an import gives the run back, and what Kineto's own rows carry,
// for the tools that read them (HTA: stream, correlation). Keys sorted, as before.
void span_args(TraceEventWriter::Json& e, const SpanRow& s, const std::string& name, const Track& track) {
  const auto arg = [&e](const char* key, int64_t value) { TraceEventWriter::field_if_set(e, key, value); };
  const bool gpu = is_gpu_kind(s.kind);
  e.StartObject();
  if ((s.kind == Kind::GpuMemcpy || s.kind == Kind::GpuMemset)) arg("bytes", s.bytes);
  if (gpu || s.kind == Kind::CudaRuntime) arg("correlation", s.msg_id);
  arg("ddpscope.bucket", s.bucket);
  arg("ddpscope.bytes", s.bytes);
  arg("ddpscope.ctx_id", s.ctx_id);
  arg("ddpscope.iteration", s.iteration);
  e.Key("ddpscope.kind");
  e.String(kind_name(s.kind));
  arg("ddpscope.msg_id", s.msg_id);
  if (name != s.name) {
    e.Key("ddpscope.name");
    TraceEventWriter::string(e, s.name, "span name");
  }
  arg("ddpscope.param", s.param);
  arg("ddpscope.peer", s.peer);
  arg("ddpscope.seq", s.seq);
  if (gpu) {
    e.Key("device");
    e.Int64(track.device);
    e.Key("stream");
    e.Int64(track.stream);
  }
  e.EndObject();
}

void write_span(TraceEventWriter& events, const ExportContext& c, const SpanRow& s, const Track& track) {
  const std::string name =
      s.kind == Kind::Iteration && s.iteration >= 0 ? "ProfilerStep#" + std::to_string(s.iteration) : s.name;
  TraceEventWriter::Json& e = events.begin_event();
  e.StartObject();
  e.Key("args");
  span_args(e, s, name, track);
  TraceEventWriter::span_fields(e, kineto_category(s.kind), name, track.pid, track.tid, c.us(s.t_begin_ns),
                                s.t_end_ns - s.t_begin_ns);
  events.end_event();
}

// Metrics (loss, iteration_ms, ...) as counters at their iteration's end.
void write_metrics(RankFile& file, const ExportContext& c, const RankRow& k, int64_t rank_pid,
                   const std::map<int64_t, int64_t>& iteration_end) {
  for (const MetricRow& m : c.run.metrics({}, k.rank)) {
    const auto end = iteration_end.find(m.iteration);
    nlohmann::json args = {{"value", std::isfinite(m.value) ? nlohmann::json(m.value) : nlohmann::json(nullptr)},
                           {"ddpscope.kind", "metric"}};
    if (m.iteration >= 0) args["ddpscope.iteration"] = m.iteration;
    file.event({{"ph", "C"},
                {"name", m.name},
                {"pid", rank_pid},
                {"tid", 0},
                {"ts", c.us(end != iteration_end.end() ? end->second : c.base)},
                {"args", std::move(args)}});
  }
}

int64_t export_rank(ExportContext& c, const RankRow& k, const std::string& path) {
  const int64_t rank_pid = k.pid > 0 ? k.pid : 1000000 + k.rank;
  const std::map<int, Track> tracks = tracks_of(c.threads, k.rank, rank_pid);
  RankFile file(path);
  file.header(rank_header(c, k));
  write_track_names(file, c, k, rank_pid, tracks);
  std::map<int64_t, int64_t> iteration_end;
  SpanQuery query;
  query.rank = k.rank;
  // One pack in memory at a time, in file order: trace viewers and HTA sort by time.
  c.run.each_span_row(query, [&](const SpanRow& s) {
    const auto t = tracks.find(s.thread);
    write_span(file.events(), c, s, t != tracks.end() ? t->second : Track{rank_pid, s.thread});
    if (s.kind == Kind::Iteration && s.iteration >= 0) iteration_end[s.iteration] = s.t_end_ns;
  });
  write_metrics(file, c, k, rank_pid, iteration_end);
  file.finish();
  return file.events().events();
}

}  // namespace

KinetoExportResult export_kineto_traces(RunStoreReader& run, const std::string& dir, bool force) {
  const std::vector<RankRow> ranks = run.ranks();
  prepare_folder(dir, ranks, force);
  ExportContext c{run, SqliteDb(run.path(), SQLITE_OPEN_READONLY), run.run(), run.threads(), run.time_range().first};
  KinetoExportResult result;
  for (const RankRow& k : ranks) {
    const std::string path = rank_trace_path(dir, k.rank);
    result.events += export_rank(c, k, path);
    result.files.push_back(path);
  }
  return result;
}

}  // namespace ddpscope::probes
