#include "torch_trace_import.h"

#include "atomic_file.h"

#include <algorithm>
#include <limits>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "event.h"
#include "gpu_time.h"
#include "torch_trace_scan.h"
#include "run_store_writer.h"

namespace ddpscope::probes {
namespace fs = std::filesystem;
namespace {

using namespace torch_scan;

#define IMPORT_ERROR(...) TraceFileError(detail::concat(__VA_ARGS__), __FILE__, __LINE__)

constexpr size_t kBatchEvents = 32768;
constexpr int64_t kMaxNameBytes = int64_t{64} << 20;  // distinct event names one trace may hold
constexpr const char* kWholeTrace = "whole trace (no ProfilerStep): one iteration";

// The second pass: one file's events as batches for the writer.
class RankWriter {
 public:
  RankWriter(RunStoreWriter& writer, const FileScan& f, const RankClock& clock)
      : writer_(writer), f_(f), steps_(f.steps) {
    batch_.rank = f.rank;
    batch_.clock_offset_ns = clock.offset_ns;
    const TraceHeader& h = f.header;
    nlohmann::json rank = {{"type", "rank"},
                           {"host", h.ddpscope_host},
                           {"pid", f.pid},
                           {"device", !h.ddpscope_device.empty() ? h.ddpscope_device
                                      : f.has_gpu                ? "cuda"
                                                                 : "cpu"}};
    nlohmann::json clk = {{"type", "clock"},
                          {"t_local_ns", 0},
                          {"offset_ns", clock.offset_ns},
                          {"rtt_ns", 0},
                          {"uncertainty_ns", clock.uncertainty_ns}};
    batch_.records = {rank.dump(), clk.dump()};
    for (const auto& [key, slot] : f.threads)
      batch_.threads.push_back({slot.index, slot.tid, slot.name});
    for (size_t i = 0; i < f.ops.size(); ++i)
      op_at_[{f.ops[i].begin, f.ops[i].op}] = i;
    for (size_t i = 0; i < f.launches.size(); ++i)
      launch_at_[f.launches[i].begin] = i;
    // DDP's bucket allreduces: launched after an iteration's DDP forward ends and before
    // its optimizer step starts (backward), numbered in launch order per iteration.
    std::map<int, int> bucket_count;
    for (size_t i = 0; i < f.launches.size(); ++i) {
      const Launch& l = f.launches[i];
      if (l.op != "allreduce") continue;
      const int it = steps_.at(l.begin);
      const Span* fwd = nullptr;
      for (const auto& s : f.forwards)
        if (steps_.at(s.begin) == it && s.end <= l.begin) fwd = &s;
      if (!fwd) continue;
      bool before_step = true;
      for (const auto& s : f.optimizer_steps)
        if (steps_.at(s.begin) == it && s.begin <= l.begin) before_step = false;
      if (before_step) bucket_of_[i] = bucket_count[it]++;
    }
  }

  void add(const TraceEvent& e) {
    if (e.ds_metric && e.ph == 'C') {
      batch_.records.push_back(nlohmann::json{
          {"type", "metric"},
          {"iteration", e.ds_iteration},
          {"name", e.name},
          {"value", e.value}}.dump());
      return;
    }
    if (e.ds_kind >= 0) return add_exported(e);
    if (!is_job_event(e)) return;
    const int64_t begin = f_.time_ns(e.ts_us);
    // The duration rounded on its own, so a span lasts exactly what the trace says.
    const int64_t end = e.ph == 'X' ? begin + std::llround(e.dur_us * 1000.0) : begin;
    BatchEvent be = blank_event();
    be.t_begin_ns = begin;
    be.t_end_ns = end;
    be.thread = thread_of(e);
    be.iteration = steps_.at(begin);
    std::string name = e.name;
    Kind kind = Kind::CpuOp;
    if (e.ph != 'X') {
      kind = Kind::Mark;
    } else if (e.cat == "kernel") {
      kind = is_comm_kernel(e.name) ? Kind::GpuComm : Kind::GpuKernel;
      gpu_fields(e, be);
    } else if (e.cat == "gpu_memcpy" || e.cat == "gpu_memset") {
      kind = e.cat == "gpu_memcpy" ? Kind::GpuMemcpy : Kind::GpuMemset;
      gpu_fields(e, be);
      be.bytes = e.bytes;
    } else if (e.cat == "cuda_runtime" || e.cat == "cuda_driver") {
      kind = Kind::CudaRuntime;
      be.id2 = e.correlation;
    } else if (starts_with(e.name, "ProfilerStep#")) {
      kind = profiler_step(e, be, name);
    } else if (e.name == "DistributedDataParallel.forward") {
      kind = Kind::Forward;
    } else if (starts_with(e.name, "Optimizer.step#") || starts_with(e.name, "Optimizer.zero_grad#")) {
      kind = Kind::Optimizer;
    } else if (starts_with(e.name, "autograd::engine::evaluate_function: ")) {
      kind = Kind::AutogradNode;
      name = e.name.substr(37);
      extend_backward(be);
    } else if (is_backend_op(e)) {
      if (!backend_op(e, be, kind, name)) return;
    } else if (is_c10d_launch(e)) {
      bucket_launch(be, kind, name);
    }
    push(be, kind, name, &e.args_json);
  }

  void finish() {
    if (f_.whole_trace_step) {
      // The one iteration of a trace without ProfilerStep, on its main thread.
      const Span& s = f_.steps.begin()->second;
      BatchEvent be = blank_event();
      be.t_begin_ns = s.begin;
      be.t_end_ns = s.end;
      const auto main = f_.threads.find(f_.main_thread);
      be.thread = main != f_.threads.end() ? main->second.index : 0;
      be.iteration = static_cast<int32_t>(f_.steps.begin()->first);
      push(be, Kind::Iteration, kWholeTrace);
      push_metric(be.iteration, static_cast<double>(s.end - s.begin) / 1e6);
    }
    for (const auto& [it, b] : backward_) {
      BatchEvent be = blank_event();
      be.t_begin_ns = b.begin;
      be.t_end_ns = b.end;
      be.thread = static_cast<uint16_t>(b.thread);
      be.iteration = it;
      push(be, Kind::Backward, "backward");
    }
    flush();
  }
  int64_t events() const { return events_; }

 private:
  struct Backward {
    int thread = -1;
    int64_t begin = -1, end = 0;
  };

  static BatchEvent blank_event() {
    BatchEvent be{};
    be.bytes = be.id = be.id2 = -1;
    be.param = -1;
    be.bucket = be.peer = -1;
    return be;
  }

  // What the job ran, not what the profiler did.
  static bool is_job_event(const TraceEvent& e) {
    if (e.ph != 'X' && e.ph != 'i' && e.ph != 'I') return false;
    if (e.cat == "gpu_user_annotation" || e.cat == "Trace" || e.cat == "overhead") return false;
    // The profiler's own instants (its start and "Record Window End"): not the job's.
    if (e.ph != 'X' && (e.pid_text == "Traces" || e.name == "Record Window End")) return false;
    return e.pid_text.empty() || e.pid_text != "Spans";
  }

  Kind profiler_step(const TraceEvent& e, BatchEvent& be, std::string& name) {
    const auto n = static_cast<int32_t>(std::strtoll(e.name.c_str() + 13, nullptr, 10));
    if (n == f_.empty_last_step) {  // begun, then the profiler stopped: not run
      be.t_end_ns = be.t_begin_ns;
      name = e.name + " begun, then profiling stopped (no work in it)";
      return Kind::Mark;
    }
    be.iteration = n;
    push_metric(be.iteration, static_cast<double>(be.t_end_ns - be.t_begin_ns) / 1e6);
    return Kind::Iteration;
  }

  // Backward has no span of its own in a torch trace: it runs from its first autograd
  // node to its last.
  void extend_backward(const BatchEvent& be) {
    if (be.iteration < 0) return;
    auto& b = backward_[be.iteration];
    if (b.thread < 0) b.thread = be.thread;
    b.begin = b.begin < 0 ? be.t_begin_ns : std::min(b.begin, be.t_begin_ns);
    b.end = std::max(b.end, be.t_end_ns);
  }

  // A backend collective the scan matched: its start as an instant (the Hang view's open
  // collective: from when the rank issued it), and the span when the op completed on every
  // rank of its group. False when nothing more is to be pushed.
  bool backend_op(const TraceEvent& e, BatchEvent& be, Kind& kind, std::string& name) {
    const auto it = op_at_.find({be.t_begin_ns, op_name(e.name)});
    if (it == op_at_.end()) return true;
    const BackendOp& op = f_.ops[it->second];
    BatchEvent start = be;
    start.t_begin_ns = start.t_end_ns = op.issued;
    start.iteration = steps_.at(op.issued);
    start.id = op.seq;
    start.bytes = op.bytes;
    push(start, Kind::PgOpStart, op.op);
    if (!op.completed) return false;
    be.id = op.seq;
    be.bytes = op.bytes;
    kind = Kind::PgOp;
    name = op.op;
    return true;
  }

  // A c10d launch DDP made for one of its buckets.
  void bucket_launch(BatchEvent& be, Kind& kind, std::string& name) {
    const auto it = launch_at_.find(be.t_begin_ns);
    const auto bucket = it != launch_at_.end() ? bucket_of_.find(it->second) : bucket_of_.end();
    if (bucket == bucket_of_.end()) return;
    const Launch& l = f_.launches[it->second];
    kind = Kind::Allreduce;
    be.bucket = static_cast<int16_t>(bucket->second);
    be.bytes = l.bytes;
    if (l.backend_index >= 0) {
      const BackendOp& op = f_.ops[static_cast<size_t>(l.backend_index)];
      be.id = op.seq;
      if (op.bytes >= 0) be.bytes = op.bytes;
      // A bucket's reduction runs from its launch to the backend op's end.
      be.t_end_ns = std::max(be.t_end_ns, op.completed ? op.end : be.t_end_ns);
    }
    name = "bucket allreduce";
  }

  // A span ddpscope exported (kineto_export.h): kind and fields as the run held them,
  // id and id2 as the run store's writer reads them for that kind.
  void add_exported(const TraceEvent& e) {
    if (e.ph != 'X' && e.ph != 'i' && e.ph != 'I') return;
    const Kind kind = static_cast<Kind>(e.ds_kind);
    BatchEvent be{};
    be.t_begin_ns = f_.time_ns(e.ts_us);
    be.t_end_ns = e.ph == 'X' ? be.t_begin_ns + std::llround(e.dur_us * 1000.0) : be.t_begin_ns;
    be.bytes = e.ds_bytes;
    be.param = static_cast<int32_t>(e.ds_param);
    be.bucket = static_cast<int16_t>(e.ds_bucket);
    be.peer = static_cast<int16_t>(e.ds_peer);
    be.iteration = static_cast<int32_t>(e.ds_iteration);
    be.thread = thread_of(e);
    be.id = e.ds_seq;
    be.id2 = -1;
    switch (kind) {
      case Kind::RpcSend:
      case Kind::RpcRecv:
      case Kind::DistBackward:
      case Kind::RpcCall:
      case Kind::DistContext:
      case Kind::DistFunction: be.id = e.ds_ctx, be.id2 = e.ds_msg; break;
      case Kind::Dependency: be.id = e.ds_ctx, be.id2 = e.ds_seq; break;
      case Kind::AutogradNode: be.id2 = e.ds_ctx; break;
      case Kind::GpuKernel:
      case Kind::GpuComm:
      case Kind::GpuMemcpy:
      case Kind::GpuMemset:
      case Kind::CudaRuntime: be.id2 = e.ds_msg; break;
      default: break;
    }
    push(be, kind, e.ds_name.empty() ? e.name : e.ds_name);
  }

  uint16_t thread_of(const TraceEvent& e) {
    const auto it = f_.threads.find(thread_key(e));
    return it != f_.threads.end() ? it->second.index : 0;
  }
  void gpu_fields(const TraceEvent& e, BatchEvent& be) {
    be.id2 = e.correlation;
    const auto launch = f_.launch_time.find(e.correlation);
    if (launch != f_.launch_time.end()) be.iteration = steps_.at(launch->second);
  }
  void push_metric(int iteration, double ms) {
    batch_.records.push_back(
        nlohmann::json{{"type", "metric"}, {"iteration", iteration}, {"name", "iteration_ms"}, {"value", ms}}.dump());
  }
  void push(BatchEvent be, Kind kind, const std::string& name, const std::string* args = nullptr) {
    be.kind = static_cast<uint8_t>(kind);
    auto [it, fresh] = names_.try_emplace(name, static_cast<uint32_t>(batch_.names.size()));
    if (fresh) {
      count_name(name);
      batch_.names.emplace_back(name);
    }
    be.name = it->second;
    if (args && !args->empty()) batch_.args.emplace_back(static_cast<uint32_t>(batch_.events.size()), *args);
    batch_.events.push_back(be);
    ++events_;
    if (batch_.events.size() >= kBatchEvents) flush();
  }
  // The run keeps every distinct name, so their bytes follow what the file says, not its
  // size: a 10 MB gzip of 64 KiB names, each its own, made 1.9 GB. Real traces name a
  // few thousand kernels and ops in a few MB.
  void count_name(const std::string& name) {
    if (!seen_names_.insert(std::hash<std::string>{}(name)).second) return;
    name_bytes_ += static_cast<int64_t>(name.size());
    if (name_bytes_ > kMaxNameBytes)
      throw IMPORT_ERROR("'", f_.path, "' holds more than ", kMaxNameBytes >> 20,
                         " MiB of distinct event names (by its event ", events_ + 1,
                         "; a real trace has a few MB of them): not a trace PyTorch writes; refused");
  }
  void flush() {
    if (batch_.events.empty() && batch_.records.empty()) return;
    // The writer stores a batch's events thread by thread in blocks: sort them so, and
    // their arguments' indexes with them.
    std::vector<uint32_t> order(batch_.events.size());
    for (uint32_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return batch_.events[a].thread < batch_.events[b].thread; });
    std::vector<uint32_t> moved_to(order.size());
    std::vector<BatchEvent> sorted;
    sorted.reserve(order.size());
    for (uint32_t i = 0; i < order.size(); ++i) {
      moved_to[order[i]] = i;
      sorted.push_back(batch_.events[order[i]]);
    }
    batch_.events.swap(sorted);
    for (auto& [index, json] : batch_.args)
      index = moved_to[index];
    writer_.write(batch_);
    ++batch_.sequence;
    batch_.args.clear();
    batch_.events.clear();
    batch_.records.clear();
    batch_.names.clear();
    names_.clear();
  }

  RunStoreWriter& writer_;
  const FileScan& f_;
  StepIndex steps_;
  EventBatch batch_;
  std::unordered_map<std::string, uint32_t> names_;
  std::unordered_set<size_t> seen_names_;  // hashes of every name pushed
  int64_t name_bytes_ = 0;
  std::map<std::pair<int64_t, std::string>, size_t> op_at_;
  std::map<int64_t, size_t> launch_at_;
  std::map<size_t, int> bucket_of_;
  std::map<int, Backward> backward_;
  int64_t events_ = 0;
};

}  // namespace

int rank_from_file_name(const std::string& path) {
  static const std::regex pattern("(?:rank|worker)[-_.]?([0-9]+)", std::regex::icase);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  if (!std::regex_search(name, m, pattern) || m[1].length() > 7) return -1;
  return std::stoi(m[1].str());
}

std::vector<std::string> list_trace_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(in, ec)) {
        const std::string name = entry.path().filename().string();
        const bool json = name.size() > 5 && (name.ends_with(".json") || name.ends_with(".json.gz"));
        if (entry.is_regular_file() && json) found.push_back(entry.path().string());
      }
      if (found.empty()) throw IMPORT_ERROR("folder '", in, "' holds no trace files (*.json or *.json.gz)");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(in, ec)) {
      files.push_back(in);
    } else {
      throw IMPORT_ERROR("'", in, "': no such file or folder");
    }
  }
  if (files.empty()) throw IMPORT_ERROR("no trace files given");
  return files;
}

namespace {

void check_output(const std::vector<std::string>& paths, const std::string& out, const TorchImportOptions& options) {
  std::error_code ec;
  for (const auto& p : paths) {
    if (fs::equivalent(p, out, ec))
      throw IMPORT_ERROR("--out '", out, "' is one of the traces to import; choose another path");
  }
  if (fs::exists(out, ec) && !options.force)
    throw IMPORT_ERROR("'", out, "' exists; pass --force to replace it or choose another --out");
}

// Two passes over every byte: each half of the bar is one pass.
class ImportProgress {
 public:
  ImportProgress(const std::vector<std::string>& paths, const TorchImportOptions& options) : options_(options) {
    std::error_code ec;
    for (const auto& p : paths)
      total_bytes_ += static_cast<int64_t>(fs::file_size(p, ec));
    total_bytes_ = std::max<int64_t>(total_bytes_, 1);
  }
  // The callback for one file of one pass; done() moves past it.
  std::function<bool(double)> file(const std::string& what, int pass, int64_t file_bytes) const {
    return [this, what, pass, file_bytes](double fraction) {
      if (!options_.progress) return true;
      const double whole = (pass * static_cast<double>(total_bytes_) + done_bytes_ + fraction * file_bytes) /
                           (2.0 * static_cast<double>(total_bytes_));
      return options_.progress(std::min(1.0, whole), what);
    };
  }
  void done(int64_t file_bytes) { done_bytes_ += file_bytes; }
  void next_pass() { done_bytes_ = 0; }
  void finish() const {
    if (options_.progress) options_.progress(1.0, "done");
  }

 private:
  const TorchImportOptions& options_;
  int64_t total_bytes_ = 0, done_bytes_ = 0;
};

// The first pass: each file scanned and given its rank, one file per rank.
// The rank given by hand for `path` (--rank FILE=N), -1 when none.
int rank_given(const TorchImportOptions& options, const std::string& path) {
  std::error_code ec;
  for (const auto& [file, rank] : options.ranks)
    if (file == path || fs::equivalent(file, path, ec)) return rank;
  return -1;
}

std::vector<FileScan> scan_files(const std::vector<std::string>& paths, ImportProgress& progress,
                                 const TorchImportOptions& options) {
  std::vector<FileScan> files;
  std::error_code ec;
  for (const auto& [file, rank] : options.ranks) {
    const bool named = std::any_of(paths.begin(), paths.end(),
                                   [&](const std::string& p) { return p == file || fs::equivalent(file, p, ec); });
    if (!named) throw IMPORT_ERROR("--rank names '", file, "', which is not one of the traces to import");
  }
  for (const auto& p : paths) {
    const int64_t size = static_cast<int64_t>(fs::file_size(p, ec));
    files.push_back(scan_file(p, progress.file("reading " + fs::path(p).filename().string(), 0, size)));
    progress.done(size);
    FileScan& f = files.back();
    f.rank = rank_given(options, p);
    if (f.rank < 0) f.rank = f.header.has_dist_info && f.header.rank >= 0 ? f.header.rank : rank_from_file_name(p);
    if (f.rank < 0)
      throw IMPORT_ERROR("'", p,
                         "' does not say which rank it is (no distributedInfo, as PyTorch "
                         "without Kineto writes) and its name has no rank; say it with --rank '",
                         p, "=N', or rename it with its rank (e.g. rank0.json, worker1.pt.trace.json)");
  }
  std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].rank == files[i - 1].rank)
      throw IMPORT_ERROR("'", files[i - 1].path, "' and '", files[i].path, "' are both rank ", files[i].rank,
                         "; import one trace per rank");
  }
  check_same_job(files);
  return files;
}

// "2", "2-127", "0, 3-5": ranks as runs, as long as the files read, whatever the job's
// size.
std::string rank_runs_text(const std::vector<std::pair<int, int>>& runs) {
  std::string text;
  for (const auto& [first, last] : runs)
    text += (text.empty() ? "" : ", ") +
            (first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last));
  return text;
}

// The job's size, the ranks with a trace and those without (as runs: a trace may claim
// any world size, and memory must not follow it).
void describe_ranks(const std::vector<FileScan>& files, TorchImportResult& result) {
  // In 64 bits: a trace of rank 2147483647 makes the world one larger than an int holds
  // ("no trace for ranks 0-2147483646, -2147483648-..." before).
  int64_t world = int64_t{files.back().rank} + 1;
  for (const auto& f : files)
    if (f.header.world_size > 0) world = std::max<int64_t>(world, f.header.world_size);
  world = std::min<int64_t>(world, std::numeric_limits<int>::max());
  result.world_size = static_cast<int>(world);
  int64_t next = 0;
  for (const auto& f : files) {
    result.ranks.push_back(f.rank);
    if (f.rank > next) result.absent.push_back({static_cast<int>(next), f.rank - 1});
    next = int64_t{f.rank} + 1;
  }
  if (next < world) result.absent.push_back({static_cast<int>(next), static_cast<int>(world - 1)});
  for (const auto& f : files) {
    // Events the reader left out for bad numbers (torch_trace_reader.h).
    const int64_t negative = f.header.skipped_negative_duration, bad = f.header.skipped_bad_time;
    if (negative + bad == 0) continue;
    std::string what;
    if (negative > 0) what = detail::concat(negative, " with a negative duration");
    if (bad > 0)
      what += detail::concat(what.empty() ? "" : " and ", bad,
                             " with a time that is not a number, infinite or out of range");
    result.notes.push_back(detail::concat("rank ", f.rank, ": ", negative + bad, " event",
                                          negative + bad == 1 ? "" : "s", " left out (", what, ")"));
  }
  for (const auto& f : files)
    if (f.whole_trace_step)
      result.notes.push_back(detail::concat("rank ", f.rank,
                                            "'s trace has no ProfilerStep: the whole trace is one iteration "
                                            "(as TensorBoard and HTA take it)"));
  if (result.absent.empty()) return;
  const bool one = result.absent.size() == 1 && result.absent[0].first == result.absent[0].second;
  result.notes.push_back(detail::concat(files.size(), " of the job's ", world, " ranks have a trace; no trace for rank",
                                        one ? " " : "s ", rank_runs_text(result.absent)));
}

void choose_clocks(std::vector<FileScan>& files, TorchImportResult& result) {
  const bool exported = std::all_of(files.begin(), files.end(), [](auto& f) { return f.header.ddpscope_export; });
  if (exported) {
    // ddpscope's export is on the run's shared clock already: keep it and its uncertainty.
    for (const auto& f : files)
      result.clocks.push_back({f.rank, 0, f.header.ddpscope_clock_uncertainty_ns, 0, true});
    return;
  }
  result.clocks = align_clocks(files);
  for (const auto& c : result.clocks) {
    if (c.uncertainty_ns < 0)
      result.notes.push_back(detail::concat("rank ", c.rank, " shares no collective with rank ", files.front().rank,
                                            ": its clock could not be aligned (offset 0)"));
  }
}

// HTA's window (gpu_time.h): it leaves out the last ProfilerStep when the job's traces
// name two steps or more, and rounds times to each trace's own microseconds.
GpuWindow gpu_window(const std::vector<FileScan>& files, const TorchImportResult& result) {
  GpuWindow w;
  std::set<int64_t> steps;
  const TraceHeader& first = files.front().header;
  if (first.ddpscope_export && first.ddpscope_leave_out_last_step >= 0) {
    // ddpscope's export says the window the exported run had, on the run's clock.
    w.leave_out_last_step = first.ddpscope_leave_out_last_step > 0;
    for (const FileScan& f : files)
      w.ranks[f.rank] = {f.header.ddpscope_last_step_begin_ns, f.header.ddpscope_us_origin_ns};
    return w;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const FileScan& f = files[i];
    steps.insert(f.step_numbers.begin(), f.step_numbers.end());
    const int64_t offset = result.clocks[i].offset_ns;
    GpuWindow::Rank r;
    if (f.last_step_begin != INT64_MIN) r.last_step_begin_ns = f.last_step_begin + offset;
    // ddpscope's own export is in nanoseconds already; a trace's microsecond n is at
    // base + 1000 n + offset on the run's clock.
    if (!f.header.ddpscope_export) r.us_origin_ns = ((f.header.base_time_ns + offset) % 1000 + 1000) % 1000;
    w.ranks[f.rank] = r;
  }
  w.leave_out_last_step = steps.size() >= 2;
  return w;
}

RunDescription run_description(const std::vector<FileScan>& files, const TorchImportResult& result) {
  nlohmann::json config = {{"source", "torch-trace"}, {"form", files.front().header.list_form ? "list" : "kineto"}};
  nlohmann::json traces = nlohmann::json::object();
  for (const auto& f : files)
    traces[std::to_string(f.rank)] = fs::absolute(f.path).lexically_normal().string();
  config["traces"] = traces;
  nlohmann::json absent = nlohmann::json::array();
  for (const auto& [first, last] : result.absent)
    absent.push_back({first, last});
  config["absent_ranks"] = absent;  // [first, last] runs
  config["gpu_window"] = gpu_window_json(gpu_window(files, result));
  std::string backend = files.front().header.backend;
  if (backend.empty()) backend = "torch";
  return {config.dump(), result.world_size, backend, "PyTorch job (profiler traces)"};
}

// The second pass, into `path`.
void write_run(const std::vector<FileScan>& files, const std::string& path, TorchImportResult& result,
               ImportProgress& progress) {
  RunStoreWriter writer(path);
  writer.begin_run(run_description(files, result));
  progress.next_pass();
  for (size_t i = 0; i < files.size(); ++i) {
    const FileScan& f = files[i];
    RankWriter rank_writer(writer, f, result.clocks[i]);
    read_torch_trace(
        f.path, [&](const TraceEvent& e) { rank_writer.add(e); },
        progress.file("writing rank " + std::to_string(f.rank), 1, f.bytes));
    rank_writer.finish();
    result.events += rank_writer.events();
    progress.done(f.bytes);
  }
  std::string message = "imported from PyTorch profiler traces";
  for (const auto& n : result.notes)
    message += "; " + n;
  writer.end_run("finished", message);
  writer.fold_wal();
}

// A run that packs denser than a run file may be would be refused when opened
// (run_store_reader.h): events that repeat their times and ids pack to almost nothing.
void check_packed_size(const std::vector<std::string>& paths, const std::string& run, int64_t events) {
  std::error_code ec;
  const auto bytes = static_cast<int64_t>(fs::file_size(run, ec));
  if (ec || events <= max_spans_for_file(bytes)) return;
  throw IMPORT_ERROR(paths.size() == 1 ? "'" + paths[0] + "' holds " : "the traces hold ", events,
                     " events that pack into ", bytes, " bytes, more than one per ", kMinBytesPerSpan,
                     " bytes: a profiler's events differ in their times and ids (PyTorch's traces pack into 5 "
                     "bytes an event or more), these repeat as if made to exhaust memory; not imported");
}

}  // namespace

TorchImportResult import_torch_traces(const std::vector<std::string>& inputs, const std::string& out,
                                      const TorchImportOptions& options) {
  const std::vector<std::string> paths = list_trace_files(inputs);
  check_output(paths, out, options);
  ImportProgress progress(paths, options);
  std::vector<FileScan> files = scan_files(paths, progress, options);
  TorchImportResult result;
  describe_ranks(files, result);
  mark_unfinished(files);
  choose_clocks(files, result);
  // The run is written beside `out` and moved into place once whole.
  AtomicFile file(out, ".importing");
  write_run(files, file.partial(), result, progress);
  check_packed_size(paths, file.partial(), result.events);
  file.commit();
  progress.finish();
  return result;
}

}  // namespace ddpscope::probes
