#include "torch_trace_import.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <unordered_map>

#include "event.h"
#include "run_store_writer.h"

namespace ddpscope::probes {
namespace fs = std::filesystem;
namespace {

#define IMPORT_ERROR(...) TraceFileError(detail::concat(__VA_ARGS__), __FILE__, __LINE__)

constexpr size_t kBatchEvents = 32768;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_gpu_row(const TraceEvent& e) {
  return e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset" ||
         e.cat == "gpu_user_annotation";
}

// HTA's communication kernels: names matching ^nccl or containing ncclKernel (its
// ncclDevKernel_ names match the first).
bool is_comm_kernel(const std::string& name) {
  return starts_with(name, "nccl") || name.find("ncclKernel") != std::string::npos ||
         name.find("ncclDevKernel") != std::string::npos;
}

// "all_reduce" -> "allreduce": the names ddpscope's own process groups give their ops.
std::string op_name(const std::string& backend_op) {
  std::string op = backend_op.substr(backend_op.find(':') + 1);
  static const std::map<std::string, std::string> names = {
      {"all_reduce", "allreduce"}, {"all_gather", "allgather"}, {"all_to_all", "alltoall"},
      {"allreduce_coalesced", "allreduce_coalesced"}, {"reduce_scatter", "reduce_scatter"}};
  const auto it = names.find(op);
  return it != names.end() ? it->second : op;
}

// A backend's own record of a collective ("gloo:all_reduce", "nccl:broadcast"), not the
// GPU-side copy of an annotation.
bool is_backend_op(const TraceEvent& e) {
  return e.ph == 'X' && e.cat != "gpu_user_annotation" &&
         (starts_with(e.name, "gloo:") || starts_with(e.name, "nccl:"));
}

// c10d's launch of a collective ("c10d::allreduce_"): DDP's bucket allreduces are these.
bool is_c10d_launch(const TraceEvent& e) {
  return e.ph == 'X' && starts_with(e.name, "c10d::") && e.name.back() == '_';
}

std::string thread_key(const TraceEvent& e) {
  return (e.pid_text.empty() ? std::to_string(e.pid) : e.pid_text) + "|" +
         (e.tid_text.empty() ? std::to_string(e.tid) : e.tid_text);
}

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Span {
  int64_t begin = 0, end = 0;
};

struct BackendOp {
  std::string op, group;
  int64_t begin = 0, end = 0, bytes = -1;
  int seq = 0;  // within its group, from 1
  bool completed = true;
  // When the rank issued it: the c10d launch that started it (DDP's bucket allreduce can
  // wait in the backend's queue long before gloo's thread takes it up), else its begin.
  int64_t issued = 0;
};

struct Launch {
  std::string op;
  int64_t begin = 0, end = 0, bytes = -1;
  int backend_index = -1;  // the backend op it started (the k-th of its op)
};

struct ThreadSlot {
  uint16_t index = 0;
  std::string name;
  int64_t tid = 0;
  bool gpu = false;  // named "GPU d stream s" here, not by the trace's "stream s"
};

// What the first pass learns of one file.
struct FileScan {
  std::string path;
  TraceHeader header;
  int rank = -1;
  int64_t pid = 0;
  std::map<int64_t, Span> steps;  // ProfilerStep#N
  std::vector<Span> forwards, optimizer_steps;
  std::vector<BackendOp> ops;  // in file order, then sorted by begin
  std::vector<Launch> launches;
  std::vector<int64_t> comm_kernel_ends;
  std::unordered_map<int64_t, int64_t> launch_time;  // correlation -> CUDA call begin
  std::map<std::string, ThreadSlot> threads;
  bool has_gpu = false;
  int64_t bytes = 0;
  // Begins of the CPU events (ProfilerStep aside), to tell an empty last step; freed
  // once the scan is done.
  std::vector<int64_t> cpu_begins;
  int64_t empty_last_step = -1;  // a last ProfilerStep#N with nothing in it: N

  int64_t time_ns(double ts_us) const {
    return header.base_time_ns + static_cast<int64_t>(std::llround(ts_us * 1000.0));
  }
};

// The iteration containing a time: steps are few, so a sorted list and a binary search.
class StepIndex {
 public:
  explicit StepIndex(const std::map<int64_t, Span>& steps) {
    for (const auto& [n, s] : steps) list_.push_back({s.begin, s.end, n});
    std::sort(list_.begin(), list_.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  }
  int at(int64_t t) const {
    auto it = std::upper_bound(list_.begin(), list_.end(), t,
                               [](int64_t v, const Entry& e) { return v < e.begin; });
    if (it == list_.begin()) return -1;
    --it;
    return t <= it->end ? static_cast<int>(it->n) : -1;
  }

 private:
  struct Entry {
    int64_t begin, end, n;
  };
  std::vector<Entry> list_;
};

ThreadSlot& slot_for(FileScan& f, const TraceEvent& e) {
  const std::string key = thread_key(e);
  auto it = f.threads.find(key);
  if (it != f.threads.end()) return it->second;
  DDPSCOPE_CHECK(f.threads.size() < 65535, "'", f.path, "' has more than 65535 threads and streams");
  ThreadSlot s;
  s.index = static_cast<uint16_t>(f.threads.size());
  s.tid = e.tid;
  if (is_gpu_row(e)) {
    s.gpu = true;
    s.name = "GPU " + std::to_string(e.device >= 0 ? e.device : e.pid) + " stream " +
             std::to_string(e.stream >= 0 ? e.stream : e.tid);
  } else {
    s.name = e.tid_text.empty() ? "thread " + std::to_string(e.tid) : e.tid_text;
  }
  return f.threads.emplace(key, s).first->second;
}

int64_t op_bytes(const TraceEvent& e) {
  if (e.in_nelems >= 0 && dtype_bytes(e.dtype) > 0) return e.in_nelems * dtype_bytes(e.dtype);
  if (e.first_input_numel >= 0 && dtype_bytes(e.first_input_type) > 0)
    return e.first_input_numel * dtype_bytes(e.first_input_type);
  return -1;
}

// The profiler closes the step it is in when it stops: a rank that stopped right after
// calling step() (a crash, an early exit) ends with a ProfilerStep#N holding nothing. It
// is not an iteration the rank ran: it stays in the run as a mark, not an iteration.
void drop_empty_last_step(FileScan& f) {
  std::vector<int64_t> begins = std::move(f.cpu_begins);
  if (f.steps.size() < 2) return;
  const auto last = std::max_element(f.steps.begin(), f.steps.end(),
                                     [](auto& a, auto& b) { return a.second.begin < b.second.begin; });
  const int64_t base = f.header.base_time_ns;
  const bool empty = std::none_of(begins.begin(), begins.end(), [&](int64_t t) {
    return t + base >= last->second.begin && t + base <= last->second.end;
  });
  if (!empty) return;
  f.empty_last_step = last->first;
  f.steps.erase(last);
}

FileScan scan_file(const std::string& path, const std::function<bool(double)>& progress) {
  FileScan f;
  f.path = path;
  std::error_code ec;
  f.bytes = static_cast<int64_t>(fs::file_size(path, ec));
  // Kineto writes baseTimeNanoseconds before traceEvents, but nothing promises it: the
  // first pass keeps raw microseconds and moves them once the header is known.
  std::map<std::string, TraceEvent> last_comms;               // per thread
  std::unordered_map<std::string, std::string> thread_names;
  auto us = [](double v) { return static_cast<int64_t>(std::llround(v * 1000.0)); };
  f.header = read_torch_trace(
      path,
      [&](const TraceEvent& e) {
        if (e.ph == 'M' && e.ds_thread >= 0 && e.name == "thread_name") {
          // ddpscope's export names each track with its thread index: keep both.
          DDPSCOPE_CHECK(e.ds_thread < 65535, "'", f.path, "' names thread ", e.ds_thread,
                         ", past the 65535 a rank can hold");
          ThreadSlot slot{static_cast<uint16_t>(e.ds_thread), e.meta_name, e.tid, false};
          f.threads.emplace(thread_key(e), slot);
          return;
        }
        if (e.ph == 'M') {
          if (e.name == "thread_name" && !e.meta_name.empty()) {
            // Kineto names a thread twice ("thread 773 (python3)", then its own name).
            std::string& n = thread_names[thread_key(e)];
            if (n.empty() || e.meta_name.find("(python") == std::string::npos) n = e.meta_name;
          }
          return;
        }
        if (e.ph != 'X') return;
        if (f.pid == 0 && e.pid > 0 && !is_gpu_row(e)) f.pid = e.pid;
        if (e.ds_kind >= 0) {  // a span of ddpscope's export: the second pass takes it as it is
          slot_for(f, e);
          return;
        }
        if (is_gpu_row(e)) {
          f.has_gpu = true;
          if (e.cat == "kernel" && is_comm_kernel(e.name))
            f.comm_kernel_ends.push_back(us(e.ts_us) + us(e.dur_us));
          slot_for(f, e);
          return;
        }
        slot_for(f, e);
        const Span s{us(e.ts_us), us(e.ts_us) + us(e.dur_us)};
        if (!starts_with(e.name, "ProfilerStep#")) f.cpu_begins.push_back(s.begin);
        if ((e.cat == "cuda_runtime" || e.cat == "cuda_driver") && e.correlation >= 0) {
          f.launch_time[e.correlation] = s.begin;
        } else if (starts_with(e.name, "ProfilerStep#")) {
          char* end = nullptr;
          const long long n = std::strtoll(e.name.c_str() + 13, &end, 10);
          if (end && *end == '\0') f.steps[n] = s;
        } else if (e.name == "DistributedDataParallel.forward") {
          f.forwards.push_back(s);
        } else if (starts_with(e.name, "Optimizer.step#")) {
          f.optimizer_steps.push_back(s);
        } else if (e.name == "record_param_comms") {
          last_comms[thread_key(e)] = e;
        } else if (is_backend_op(e)) {
          BackendOp op{op_name(e.name), "0", s.begin, s.end, op_bytes(e)};
          // record_param_comms (newer PyTorch) encloses its backend op on the same thread
          // and names the group and the message size.
          const auto c = last_comms.find(thread_key(e));
          if (c != last_comms.end() && e.ts_us >= c->second.ts_us &&
              e.ts_us <= c->second.ts_us + c->second.dur_us) {
            if (!c->second.pg_name.empty()) op.group = c->second.pg_name;
            if (op_bytes(c->second) >= 0) op.bytes = op_bytes(c->second);
          }
          f.ops.push_back(op);
        } else if (is_c10d_launch(e)) {
          std::string op = e.name.substr(6, e.name.size() - 7);
          f.launches.push_back({op, s.begin, s.end, op_bytes(e)});
        }
      },
      progress);
  for (auto& [key, slot] : f.threads) {
    const auto n = thread_names.find(key);
    if (n != thread_names.end() && !slot.gpu) slot.name = n->second;
  }
  // Now the header is known: raw microseconds onto the file's clock.
  const int64_t base = f.header.base_time_ns;
  for (auto& [n, s] : f.steps) s = {s.begin + base, s.end + base};
  for (auto* list : {&f.forwards, &f.optimizer_steps})
    for (auto& s : *list) s = {s.begin + base, s.end + base};
  for (auto& op : f.ops) op.begin += base, op.end += base;
  for (auto& l : f.launches) l.begin += base, l.end += base;
  for (auto& t : f.comm_kernel_ends) t += base;
  for (auto& [c, t] : f.launch_time) t += base;
  if (f.header.events == 0)
    throw IMPORT_ERROR("'", path, "' is a trace with no events; profile at least one step");
  // Collectives in the order they started, numbered per group; launches matched to the
  // backend ops they started (the k-th launch of an op to its k-th backend op).
  std::stable_sort(f.ops.begin(), f.ops.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  std::map<std::string, int> seq;
  for (auto& op : f.ops) op.seq = ++seq[op.group];
  std::map<std::string, std::vector<int>> by_op;
  for (size_t i = 0; i < f.ops.size(); ++i) by_op[f.ops[i].op].push_back(static_cast<int>(i));
  std::map<std::string, size_t> next;
  std::stable_sort(f.launches.begin(), f.launches.end(),
                   [](auto& a, auto& b) { return a.begin < b.begin; });
  for (auto& op : f.ops) op.issued = op.begin;
  for (auto& l : f.launches) {
    auto& list = by_op[l.op];
    size_t& k = next[l.op];
    if (k < list.size()) {
      l.backend_index = list[k++];
      BackendOp& op = f.ops[static_cast<size_t>(l.backend_index)];
      op.issued = std::min(op.issued, l.begin);
    }
  }
  drop_empty_last_step(f);
  return f;
}

// Each rank's offset onto the reference rank's clock from the instants every rank leaves
// a collective together: the ends of NCCL kernels where the traces have them, else the
// ends of the backend's collective spans. The median difference is the offset; the median
// distance from it, the uncertainty.
std::vector<RankClock> align_clocks(std::vector<FileScan>& files) {
  const bool gpu = std::any_of(files.begin(), files.end(),
                               [](auto& f) { return !f.comm_kernel_ends.empty(); });
  auto points = [&](const FileScan& f) {
    if (gpu) return f.comm_kernel_ends;
    std::vector<int64_t> ends;
    for (const auto& op : f.ops) ends.push_back(op.end);
    return ends;
  };
  std::vector<RankClock> clocks;
  const std::vector<int64_t> ref = points(files.front());
  for (auto& f : files) {
    RankClock c{f.rank};
    std::vector<int64_t> mine = points(f);
    std::sort(mine.begin(), mine.end());
    std::vector<int64_t> ref_sorted = ref;
    std::sort(ref_sorted.begin(), ref_sorted.end());
    const size_t n = std::min(mine.size(), ref_sorted.size());
    if (&f == &files.front()) {
      c.uncertainty_ns = 0;
      c.matched_collectives = static_cast<int>(n);
    } else if (n > 0) {
      std::vector<int64_t> diffs(n);
      for (size_t k = 0; k < n; ++k) diffs[k] = ref_sorted[k] - mine[k];
      c.offset_ns = median(diffs);
      std::vector<int64_t> spread(n);
      for (size_t k = 0; k < n; ++k) spread[k] = std::llabs(diffs[k] - c.offset_ns);
      c.uncertainty_ns = median(spread);
      c.matched_collectives = static_cast<int>(n);
    }
    clocks.push_back(c);
  }
  return clocks;
}

// A collective cannot complete unless every rank of its group entered it: an op that a
// present member of its group never started stays open (the Hang view's "blocked in").
// A group's members are its pg_config ranks where a trace names them; else the default
// group ("0") holds every rank, and another group the ranks that ran its ops.
void mark_unfinished(std::vector<FileScan>& files) {
  std::map<std::string, std::set<int>> named, ran;  // group -> its pg_config ranks / ranks with its ops
  std::set<int> present;
  std::map<int, std::map<std::string, int>> last;  // rank -> group -> last seq it started
  for (const auto& f : files) {
    present.insert(f.rank);
    for (const auto& g : f.header.groups) named[g.name].insert(g.ranks.begin(), g.ranks.end());
    for (const auto& op : f.ops) {
      int& l = last[f.rank][op.group];
      l = std::max(l, op.seq);
      ran[op.group].insert(f.rank);
    }
  }
  auto members_of = [&](const std::string& g) -> const std::set<int>& {
    if (const auto it = named.find(g); it != named.end()) return it->second;
    return g == "0" ? present : ran[g];
  };
  std::map<std::string, int> reached;  // group -> the lowest last seq over its present members
  for (const auto& [g, ranks] : ran) {
    int lowest = INT32_MAX;
    for (int r : members_of(g)) {
      if (!present.count(r)) continue;  // no trace of that rank: nothing to say
      const auto it = last[r].find(g);
      lowest = std::min(lowest, it == last[r].end() ? 0 : it->second);
    }
    reached[g] = lowest;
  }
  for (auto& f : files)
    for (auto& op : f.ops) op.completed = op.seq <= reached[op.group];
}

// The second pass: one file's events as batches for the writer.
class RankWriter {
 public:
  RankWriter(RunStoreWriter& writer, const FileScan& f, const RankClock& clock)
      : writer_(writer), f_(f), steps_(f.steps) {
    batch_.rank = f.rank;
    batch_.clock_offset_ns = clock.offset_ns;
    const TraceHeader& h = f.header;
    nlohmann::json rank = {{"type", "rank"}, {"host", h.ddpscope_host}, {"pid", f.pid},
                           {"device", !h.ddpscope_device.empty() ? h.ddpscope_device : f.has_gpu ? "cuda" : "cpu"}};
    nlohmann::json clk = {{"type", "clock"}, {"t_local_ns", 0}, {"offset_ns", clock.offset_ns},
                          {"rtt_ns", 0}, {"uncertainty_ns", clock.uncertainty_ns}};
    batch_.records = {rank.dump(), clk.dump()};
    for (const auto& [key, slot] : f.threads) batch_.threads.push_back({slot.index, slot.tid, slot.name});
    for (size_t i = 0; i < f.ops.size(); ++i) op_at_[{f.ops[i].begin, f.ops[i].op}] = i;
    for (size_t i = 0; i < f.launches.size(); ++i) launch_at_[f.launches[i].begin] = i;
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
      batch_.records.push_back(nlohmann::json{{"type", "metric"}, {"iteration", e.ds_iteration},
                                              {"name", e.name}, {"value", e.value}}
                                   .dump());
      return;
    }
    if (e.ds_kind >= 0) return add_exported(e);
    if (e.ph != 'X' && e.ph != 'i' && e.ph != 'I') return;
    if (e.cat == "gpu_user_annotation" || e.cat == "Trace" || e.cat == "overhead") return;
    // The profiler's own instants (its start and "Record Window End"): not the job's.
    if (e.ph != 'X' && (e.pid_text == "Traces" || e.name == "Record Window End")) return;
    if (!e.pid_text.empty() && e.pid_text == "Spans") return;
    const int64_t begin = f_.time_ns(e.ts_us);
    // The duration rounded on its own, so a span lasts exactly what the trace says.
    const int64_t end = e.ph == 'X' ? begin + std::llround(e.dur_us * 1000.0) : begin;
    BatchEvent be{};
    be.t_begin_ns = begin;
    be.t_end_ns = end;
    be.bytes = be.id = be.id2 = -1;
    be.param = -1;
    be.bucket = be.peer = -1;
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
      const auto n = static_cast<int32_t>(std::strtoll(e.name.c_str() + 13, nullptr, 10));
      if (n == f_.empty_last_step) {  // begun, then the profiler stopped: not run
        kind = Kind::Mark;
        be.t_end_ns = begin;
        name = e.name + " begun, then profiling stopped (no work in it)";
      } else {
        kind = Kind::Iteration;
        be.iteration = n;
        push_metric(be.iteration, static_cast<double>(end - begin) / 1e6);
      }
    } else if (e.name == "DistributedDataParallel.forward") {
      kind = Kind::Forward;
    } else if (starts_with(e.name, "Optimizer.step#") || starts_with(e.name, "Optimizer.zero_grad#")) {
      kind = Kind::Optimizer;
    } else if (starts_with(e.name, "autograd::engine::evaluate_function: ")) {
      kind = Kind::AutogradNode;
      name = e.name.substr(37);
      if (be.iteration >= 0) {
        auto& b = backward_[be.iteration];
        if (b.thread < 0) b.thread = be.thread;
        b.begin = b.begin < 0 ? begin : std::min(b.begin, begin);
        b.end = std::max(b.end, end);
      }
    } else if (is_backend_op(e)) {
      const auto it = op_at_.find({begin, op_name(e.name)});
      if (it != op_at_.end()) {
        const BackendOp& op = f_.ops[it->second];
        // The op's start as an instant (the Hang view's open collective: from when the
        // rank issued it), and the span when the op completed on every rank of its group.
        const int32_t iteration = be.iteration;
        be.t_begin_ns = be.t_end_ns = op.issued;
        be.iteration = steps_.at(op.issued);
        be.id = op.seq;
        be.bytes = op.bytes;
        push(be, Kind::PgOpStart, op.op);
        if (!op.completed) return;
        be.iteration = iteration;
        be.t_begin_ns = begin;
        be.t_end_ns = end;
        kind = Kind::PgOp;
        name = op.op;
      }
    } else if (is_c10d_launch(e)) {
      const auto it = launch_at_.find(begin);
      const auto bucket = it != launch_at_.end() ? bucket_of_.find(it->second) : bucket_of_.end();
      if (bucket != bucket_of_.end()) {
        const Launch& l = f_.launches[it->second];
        kind = Kind::Allreduce;
        be.bucket = static_cast<int16_t>(bucket->second);
        be.bytes = l.bytes;
        if (l.backend_index >= 0) {
          const BackendOp& op = f_.ops[static_cast<size_t>(l.backend_index)];
          be.id = op.seq;
          if (op.bytes >= 0) be.bytes = op.bytes;
          // A bucket's reduction runs from its launch to the backend op's end.
          be.t_end_ns = std::max(end, op.completed ? op.end : end);
        }
        name = "bucket allreduce";
      }
    }
    push(be, kind, name);
  }

  void finish() {
    for (const auto& [it, b] : backward_) {
      BatchEvent be{};
      be.t_begin_ns = b.begin;
      be.t_end_ns = b.end;
      be.bytes = be.id = be.id2 = -1;
      be.param = -1;
      be.bucket = be.peer = -1;
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
      case Kind::RpcSend: case Kind::RpcRecv: case Kind::DistBackward: case Kind::RpcCall:
      case Kind::DistContext: case Kind::DistFunction:
        be.id = e.ds_ctx, be.id2 = e.ds_msg;
        break;
      case Kind::Dependency: be.id = e.ds_ctx, be.id2 = e.ds_seq; break;
      case Kind::AutogradNode: be.id2 = e.ds_ctx; break;
      case Kind::GpuKernel: case Kind::GpuComm: case Kind::GpuMemcpy: case Kind::GpuMemset:
      case Kind::CudaRuntime:
        be.id2 = e.ds_msg;
        break;
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
    batch_.records.push_back(nlohmann::json{{"type", "metric"}, {"iteration", iteration},
                                            {"name", "iteration_ms"}, {"value", ms}}
                                 .dump());
  }
  void push(BatchEvent be, Kind kind, const std::string& name) {
    be.kind = static_cast<uint8_t>(kind);
    auto [it, fresh] = names_.try_emplace(name, static_cast<uint32_t>(batch_.names.size()));
    if (fresh) batch_.names.emplace_back(name);
    be.name = it->second;
    batch_.events.push_back(be);
    ++events_;
    if (batch_.events.size() >= kBatchEvents) flush();
  }
  void flush() {
    if (batch_.events.empty() && batch_.records.empty()) return;
    // The writer stores a batch's events thread by thread in blocks: sort them so.
    std::stable_sort(batch_.events.begin(), batch_.events.end(),
                     [](const BatchEvent& a, const BatchEvent& b) { return a.thread < b.thread; });
    writer_.write(batch_);
    ++batch_.sequence;
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
  std::map<std::pair<int64_t, std::string>, size_t> op_at_;
  std::map<int64_t, size_t> launch_at_;
  std::map<size_t, int> bucket_of_;
  std::map<int, Backward> backward_;
  int64_t events_ = 0;
};

void check_same_job(const std::vector<FileScan>& files) {
  const FileScan* first_dist = nullptr;
  for (const auto& f : files) {
    if (!f.header.has_dist_info) continue;
    if (!first_dist) {
      first_dist = &f;
      continue;
    }
    const TraceHeader& a = first_dist->header;
    const TraceHeader& b = f.header;
    if (a.world_size != b.world_size || a.backend != b.backend)
      throw IMPORT_ERROR("'", first_dist->path, "' and '", f.path,
                         "' are traces of different jobs (world size ", a.world_size, " with ",
                         a.backend, " against ", b.world_size, " with ", b.backend,
                         "); import one job's traces at a time");
  }
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].header.list_form != files[0].header.list_form)
      throw IMPORT_ERROR("'", files[0].path, "' and '", files[i].path,
                         "' are of different trace forms (one from a PyTorch with Kineto, one "
                         "without): they cannot be of one job; import one job's traces at a time");
  }
}

}  // namespace

int rank_from_file_name(const std::string& path) {
  static const std::regex pattern("rank[-_.]?([0-9]+)", std::regex::icase);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  if (!std::regex_search(name, m, pattern)) return -1;
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
      if (found.empty())
        throw IMPORT_ERROR("folder '", in, "' holds no trace files (*.json or *.json.gz)");
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

TorchImportResult import_torch_traces(const std::vector<std::string>& inputs, const std::string& out,
                                      const TorchImportOptions& options) {
  const std::vector<std::string> paths = list_trace_files(inputs);
  std::error_code ec;
  for (const auto& p : paths) {
    if (fs::equivalent(p, out, ec))
      throw IMPORT_ERROR("--out '", out, "' is one of the traces to import; choose another path");
  }
  if (fs::exists(out, ec) && !options.force)
    throw IMPORT_ERROR("'", out, "' exists; pass --force to replace it or choose another --out");
  int64_t total_bytes = 0;
  for (const auto& p : paths) total_bytes += static_cast<int64_t>(fs::file_size(p, ec));
  total_bytes = std::max<int64_t>(total_bytes, 1);
  int64_t done_bytes = 0;
  // Two passes over every byte: each half of the bar is one pass.
  auto progress_for = [&](const std::string& what, int pass, int64_t file_bytes) {
    return [&, what, pass, file_bytes](double fraction) {
      if (!options.progress) return true;
      const double whole =
          (pass * static_cast<double>(total_bytes) + done_bytes + fraction * file_bytes) /
          (2.0 * static_cast<double>(total_bytes));
      return options.progress(std::min(1.0, whole), what);
    };
  };

  std::vector<FileScan> files;
  for (const auto& p : paths) {
    const int64_t size = static_cast<int64_t>(fs::file_size(p, ec));
    files.push_back(scan_file(p, progress_for("reading " + fs::path(p).filename().string(), 0, size)));
    done_bytes += size;
    FileScan& f = files.back();
    f.rank = f.header.has_dist_info && f.header.rank >= 0 ? f.header.rank : rank_from_file_name(p);
    if (f.rank < 0)
      throw IMPORT_ERROR("'", p, "' does not say which rank it is (no distributedInfo, as PyTorch "
                         "without Kineto writes) and its name has no rank; rename it with its rank "
                         "(e.g. rank0.json, rank-1.json) and import again");
  }
  std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].rank == files[i - 1].rank)
      throw IMPORT_ERROR("'", files[i - 1].path, "' and '", files[i].path, "' are both rank ",
                         files[i].rank, "; import one trace per rank");
  }
  check_same_job(files);

  TorchImportResult result;
  int world = files.back().rank + 1;
  for (const auto& f : files)
    if (f.header.world_size > 0) world = std::max(world, f.header.world_size);
  result.world_size = world;
  for (const auto& f : files) result.ranks.push_back(f.rank);
  for (int r = 0, k = 0; r < world; ++r) {
    if (k < static_cast<int>(files.size()) && files[k].rank == r)
      ++k;
    else
      result.absent.push_back(r);
  }
  if (!result.absent.empty()) {
    std::string list;
    for (int r : result.absent) list += (list.empty() ? "" : ", ") + std::to_string(r);
    result.notes.push_back(detail::concat(files.size(), " of the job's ", world,
                                          " ranks have a trace; no trace for rank",
                                          result.absent.size() > 1 ? "s " : " ", list));
  }
  mark_unfinished(files);
  const bool exported = std::all_of(files.begin(), files.end(), [](auto& f) { return f.header.ddpscope_export; });
  if (exported) {
    // ddpscope's export is on the run's shared clock already: keep it and its uncertainty.
    for (const auto& f : files) result.clocks.push_back({f.rank, 0, f.header.ddpscope_clock_uncertainty_ns, 0, true});
  } else {
    result.clocks = align_clocks(files);
  }
  for (const auto& c : result.clocks) {
    if (exported) break;
    if (c.uncertainty_ns < 0)
      result.notes.push_back(detail::concat("rank ", c.rank, " shares no collective with rank ",
                                            files.front().rank,
                                            ": its clock could not be aligned (offset 0)"));
  }

  // The run is written beside `out` and moved into place once whole.
  const std::string partial = out + ".importing";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(partial + suffix, ec);
  try {
    {
      RunStoreWriter writer(partial);
      nlohmann::json config = {{"source", "torch-trace"},
                               {"form", files.front().header.list_form ? "list" : "kineto"}};
      nlohmann::json traces = nlohmann::json::object();
      for (const auto& f : files) traces[std::to_string(f.rank)] = fs::absolute(f.path).lexically_normal().string();
      config["traces"] = traces;
      config["absent_ranks"] = result.absent;
      std::string backend = files.front().header.backend;
      if (backend.empty()) backend = "torch";
      writer.begin_run({config.dump(), world, backend, "PyTorch job (profiler traces)"});
      done_bytes = 0;
      for (size_t i = 0; i < files.size(); ++i) {
        const FileScan& f = files[i];
        RankWriter rank_writer(writer, f, result.clocks[i]);
        read_torch_trace(f.path, [&](const TraceEvent& e) { rank_writer.add(e); },
                         progress_for("writing rank " + std::to_string(f.rank), 1, f.bytes));
        rank_writer.finish();
        result.events += rank_writer.events();
        done_bytes += f.bytes;
      }
      std::string message = "imported from PyTorch profiler traces";
      for (const auto& n : result.notes) message += "; " + n;
      writer.end_run("finished", message);
      writer.fold_wal();
    }
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(partial + suffix, ec);
    fs::rename(partial, out);
  } catch (...) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(partial + suffix, ec);
    throw;
  }
  if (options.progress) options.progress(1.0, "done");
  return result;
}

}  // namespace ddpscope::probes
